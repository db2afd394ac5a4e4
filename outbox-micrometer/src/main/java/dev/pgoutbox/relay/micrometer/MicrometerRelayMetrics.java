package dev.pgoutbox.relay.micrometer;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.OutboxStats;
import dev.pgoutbox.relay.OutboxTableStats;
import dev.pgoutbox.relay.RelayListener;
import dev.pgoutbox.relay.WalSlotStats;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.ToDoubleFunction;
import org.jspecify.annotations.Nullable;

/**
 * The relay's metrics, as a {@link RelayListener}. Names as Prometheus renders them (each tagged
 * {@code relay=<name>}):
 *
 * <ul>
 *   <li>{@code outbox_events_published_total}: events published;
 *   <li>{@code outbox_events_failed_total{event_type}}: failed publish attempts;
 *   <li>{@code outbox_events_dead_lettered_total{event_type}}: events dead-lettered;
 *   <li>{@code outbox_order_violations_total}: events a publisher reported published after an
 *       earlier event of their aggregate failed in the same batch (should stay 0);
 *   <li>{@code outbox_record_shortfall_total}: outcomes the relay could not record because the row
 *       was changed behind its back (should stay 0);
 *   <li>{@code outbox_batch_duration_seconds}: claim-to-commit time of each batch, with buckets
 *       ({@code _bucket{le}}, 5 ms to 60 s) for quantiles in PromQL;
 *   <li>{@code outbox_publish_lag_seconds}: from an event's {@code created_at} to its publish, with
 *       buckets (10 ms to 1 h);
 *   <li>{@code outbox_relay_heartbeat_age_seconds}: time since this relay last refreshed its row in
 *       the relay registry (every 5 s while it reaches the database; past 30 s other relays and the
 *       admin count it dead);
 *   <li>{@code outbox_events_pending}, {@code outbox_dead_letters}, {@code
 *       outbox_blocked_aggregates}, {@code outbox_oldest_pending_age_seconds}: read from the
 *       database every {@code metricsRefreshInterval} (10 s by default), not on each scrape;
 *   <li>{@code outbox_wal_slot_lag_bytes} and {@code outbox_wal_slot_lag_seconds}: a {@code
 *       WalRelay}'s slot lag in WAL bytes and in time ({@link WalSlotStats#lagTime()}), read
 *       likewise, with {@code outbox_wal_slot_active} (1 while a reader streams the slot) and
 *       {@code outbox_wal_slot_lost} (1 once PostgreSQL invalidated it, {@code wal_status = lost});
 *   <li>the table's health, read with them: {@code outbox_oldest_transaction_age_seconds} (the
 *       oldest open transaction in the database, which holds back vacuum), {@code
 *       outbox_table_dead_tuples}, {@code outbox_table_dead_tuple_ratio}, {@code
 *       outbox_table_size_bytes}, {@code outbox_table_index_size_bytes}, {@code
 *       outbox_table_pending_index_size_bytes} and {@code outbox_table_last_autovacuum_age_seconds}
 *       (NaN until autovacuum has run on it).
 * </ul>
 *
 * <pre>{@code
 * OutboxRelay.builder()...listener(new MicrometerRelayMetrics(registry, "orders")).build();
 * }</pre>
 *
 * Thread-safe.
 */
public final class MicrometerRelayMetrics implements RelayListener {

  /** The buckets of {@code outbox_batch_duration_seconds}: 5 ms to 60 s. */
  private static final Duration[] BATCH_DURATION_BUCKETS = {
    Duration.ofMillis(5),
    Duration.ofMillis(25),
    Duration.ofMillis(100),
    Duration.ofMillis(250),
    Duration.ofMillis(500),
    Duration.ofSeconds(1),
    Duration.ofMillis(2500),
    Duration.ofSeconds(5),
    Duration.ofSeconds(10),
    Duration.ofSeconds(30),
    Duration.ofSeconds(60)
  };

  /** The buckets of {@code outbox_publish_lag_seconds}: 10 ms to 1 h. */
  private static final Duration[] PUBLISH_LAG_BUCKETS = {
    Duration.ofMillis(10),
    Duration.ofMillis(100),
    Duration.ofMillis(500),
    Duration.ofSeconds(1),
    Duration.ofSeconds(5),
    Duration.ofSeconds(30),
    Duration.ofMinutes(1),
    Duration.ofMinutes(5),
    Duration.ofMinutes(15),
    Duration.ofHours(1)
  };

  private final MeterRegistry registry;
  private final String relay;
  private final Counter published;
  private final Counter orderViolations;
  private final Counter recordShortfall;
  private final Timer batchDuration;
  private final Timer publishLag;
  private final ConcurrentMap<String, Counter> failedByType = new ConcurrentHashMap<>();
  private final ConcurrentMap<String, Counter> deadByType = new ConcurrentHashMap<>();
  private final AtomicLong pending = new AtomicLong();
  private final AtomicLong deadLetters = new AtomicLong();
  private final AtomicLong blockedAggregates = new AtomicLong();
  private final AtomicLong walSlotLagBytes = new AtomicLong();
  private final AtomicLong walSlotLagMillis = new AtomicLong();
  private final AtomicLong walFallenBack = new AtomicLong();
  private final AtomicLong oldestPendingAgeMillis = new AtomicLong();
  private final AtomicLong oldestTransactionAgeMillis = new AtomicLong();
  private final AtomicLong walSlotActive = new AtomicLong();
  private final AtomicLong walSlotLost = new AtomicLong();
  private final Clock clock;
  private final AtomicReference<Instant> lastHeartbeat;
  private final AtomicReference<OutboxTableStats> table =
      new AtomicReference<>(OutboxTableStats.EMPTY);

  /** Registers the relay's meters in {@code registry}, tagged {@code relay=relayName}. */
  public MicrometerRelayMetrics(MeterRegistry registry, String relayName) {
    this(registry, relayName, Clock.systemUTC());
  }

  /** As {@link #MicrometerRelayMetrics(MeterRegistry, String)}, ages read on {@code clock}. */
  MicrometerRelayMetrics(MeterRegistry registry, String relayName, Clock clock) {
    this.clock = requireNonNull(clock, "clock must not be null");
    this.lastHeartbeat = new AtomicReference<>(clock.instant());
    this.registry = requireNonNull(registry, "registry must not be null");
    this.relay = requireNonNull(relayName, "relayName must not be null");
    this.published =
        Counter.builder("outbox.events.published")
            .description("Events published to the broker and marked")
            .tag("relay", relay)
            .register(registry);
    this.orderViolations =
        Counter.builder("outbox.order.violations")
            .description(
                "Events a publisher reported published after an earlier event of their aggregate"
                    + " failed in the same batch")
            .tag("relay", relay)
            .register(registry);
    this.recordShortfall =
        Counter.builder("outbox.record.shortfall")
            .description("Batch outcomes not recorded because the row changed behind the relay")
            .tag("relay", relay)
            .register(registry);
    this.batchDuration =
        Timer.builder("outbox.batch.duration")
            .description("Claim to commit time of one relay batch")
            .serviceLevelObjectives(BATCH_DURATION_BUCKETS)
            .tag("relay", relay)
            .register(registry);
    this.publishLag =
        Timer.builder("outbox.publish.lag")
            .description("From an event's created_at to its publish")
            .serviceLevelObjectives(PUBLISH_LAG_BUCKETS)
            .tag("relay", relay)
            .register(registry);
    Gauge.builder(
            "outbox.relay.heartbeat.age",
            lastHeartbeat,
            t -> Math.max(0, Duration.between(t.get(), this.clock.instant()).toMillis()) / 1000.0)
        .description(
            "Time since this relay last refreshed its row in the relay registry; past 30 s it"
                + " counts as dead")
        .baseUnit("seconds")
        .tag("relay", relay)
        .register(registry);
    Gauge.builder("outbox.wal.slot.active", walSlotActive, AtomicLong::doubleValue)
        .description("1 while a reader streams the WAL relay's slot, else 0")
        .tag("relay", relay)
        .register(registry);
    Gauge.builder("outbox.wal.slot.lost", walSlotLost, AtomicLong::doubleValue)
        .description("1 once PostgreSQL invalidated the WAL relay's slot (wal_status = lost)")
        .tag("relay", relay)
        .register(registry);
    Gauge.builder("outbox.events.pending", pending, AtomicLong::doubleValue)
        .description("Unprocessed events that are not dead")
        .tag("relay", relay)
        .register(registry);
    Gauge.builder("outbox.dead.letters", deadLetters, AtomicLong::doubleValue)
        .description("Dead events not yet retried or discarded")
        .tag("relay", relay)
        .register(registry);
    Gauge.builder("outbox.blocked.aggregates", blockedAggregates, AtomicLong::doubleValue)
        .description("Aggregates whose oldest event is dead or backing off")
        .tag("relay", relay)
        .register(registry);
    Gauge.builder("outbox.wal.slot.lag", walSlotLagBytes, AtomicLong::doubleValue)
        .description("WAL written since the WAL relay's slot's confirmed position")
        .baseUnit("bytes")
        .tag("relay", relay)
        .register(registry);
    Gauge.builder("outbox.wal.fallen.back", walFallenBack, AtomicLong::doubleValue)
        .description(
            "1 once the WAL relay stopped reading its slot and publishes from the table (slot"
                + " lost, publication drift), else 0")
        .tag("relay", relay)
        .register(registry);
    Gauge.builder("outbox.wal.slot.lag.seconds", walSlotLagMillis, v -> v.doubleValue() / 1000.0)
        .description(
            "How long the oldest event behind the WAL relay's slot (pending, not parked) has waited")
        .baseUnit("seconds")
        .tag("relay", relay)
        .register(registry);
    Gauge.builder(
            "outbox.oldest.pending.age", oldestPendingAgeMillis, v -> v.doubleValue() / 1000.0)
        .description("Age of the oldest pending event (the relay's lag)")
        .baseUnit("seconds")
        .tag("relay", relay)
        .register(registry);
    Gauge.builder(
            "outbox.oldest.transaction.age",
            oldestTransactionAgeMillis,
            v -> v.doubleValue() / 1000.0)
        .description(
            "Age of the oldest open transaction in the database: it holds back vacuum of the"
                + " outbox table")
        .baseUnit("seconds")
        .tag("relay", relay)
        .register(registry);
    tableGauge(
        "outbox.table.dead.tuples",
        null,
        "Dead rows vacuum has not removed yet",
        t -> t.deadTuples());
    tableGauge(
        "outbox.table.dead.tuple.ratio",
        null,
        "Dead rows as a share of all rows of the outbox table, 0 to 1",
        OutboxTableStats::deadTupleRatio);
    tableGauge("outbox.table.size", "bytes", "Size of the outbox table", t -> t.tableBytes());
    tableGauge(
        "outbox.table.index.size",
        "bytes",
        "Size of the outbox table's indexes",
        t -> t.indexBytes());
    tableGauge(
        "outbox.table.pending.index.size",
        "bytes",
        "Size of the two indexes of pending rows the claim reads; rebuild them when a held-back"
            + " vacuum left them large",
        t -> t.pendingIndexBytes());
    tableGauge(
        "outbox.table.last.autovacuum.age",
        "seconds",
        "Time since autovacuum last finished on the outbox table; NaN if never",
        t ->
            t.lastAutovacuum() == null
                ? Double.NaN
                : Math.max(0, Duration.between(t.lastAutovacuum(), Instant.now()).toMillis())
                    / 1000.0);
  }

  private void tableGauge(
      String name,
      @Nullable String baseUnit,
      String description,
      ToDoubleFunction<OutboxTableStats> value) {
    Gauge.builder(name, table, t -> value.applyAsDouble(t.get()))
        .description(description)
        .baseUnit(baseUnit)
        .tag("relay", relay)
        .register(registry);
  }

  @Override
  public void onHeartbeat() {
    lastHeartbeat.set(clock.instant());
  }

  @Override
  public void onBatch(BatchReport report) {
    batchDuration.record(report.duration());
  }

  @Override
  public void onPublished(OutboxMessage message, Duration lag) {
    published.increment();
    publishLag.record(lag.isNegative() ? Duration.ZERO : lag);
  }

  @Override
  public void onFailed(EventFailure failure) {
    String type = failure.message().eventType();
    failedByType
        .computeIfAbsent(
            type,
            t ->
                Counter.builder("outbox.events.failed")
                    .description("Failed publish attempts")
                    .tag("relay", relay)
                    .tag("event_type", t)
                    .register(registry))
        .increment();
    if (failure.dead()) {
      deadByType
          .computeIfAbsent(
              type,
              t ->
                  Counter.builder("outbox.events.dead_lettered")
                      .description("Events dead-lettered")
                      .tag("relay", relay)
                      .tag("event_type", t)
                      .register(registry))
          .increment();
    }
  }

  @Override
  public void onOrderViolation(OutboxMessage message) {
    orderViolations.increment();
  }

  @Override
  public void onRecordShortfall(int expected, int recorded) {
    recordShortfall.increment(Math.max(0, expected - recorded));
  }

  @Override
  public void onStats(OutboxStats stats) {
    pending.set(stats.pending());
    deadLetters.set(stats.deadLetters());
    blockedAggregates.set(stats.blockedAggregates());
    oldestPendingAgeMillis.set(stats.oldestPendingAge().toMillis());
    oldestTransactionAgeMillis.set(stats.oldestTransactionAge().toMillis());
    table.set(stats.table());
  }

  @Override
  public void onWalSlot(WalSlotStats slot) {
    walSlotActive.set(slot.active() ? 1 : 0);
    walSlotLost.set(slot.lost() ? 1 : 0);
    walSlotLagBytes.set(slot.lagBytes());
    walSlotLagMillis.set(slot.lagTime().toMillis());
  }

  @Override
  public void onWalFallBack(String slotName, String reason) {
    walFallenBack.set(1);
  }

  @Override
  public void onWalResumed(String slotName) {
    walFallenBack.set(0);
  }
}

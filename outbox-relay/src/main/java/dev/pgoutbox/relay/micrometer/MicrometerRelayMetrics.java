package dev.pgoutbox.relay.micrometer;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.OutboxStats;
import dev.pgoutbox.relay.RelayListener;
import dev.pgoutbox.relay.WalSlotStats;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicLong;

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
 *   <li>{@code outbox_batch_duration_seconds}: claim-to-commit time of each batch;
 *   <li>{@code outbox_publish_lag_seconds}: from an event's {@code created_at} to its publish;
 *   <li>{@code outbox_events_pending}, {@code outbox_dead_letters}, {@code
 *       outbox_blocked_aggregates}, {@code outbox_oldest_pending_age_seconds}: read from the
 *       database every {@code metricsRefreshInterval} (10 s by default), not on each scrape;
 *   <li>{@code outbox_wal_slot_lag_bytes}: a {@code WalRelay}'s slot lag, read likewise.
 * </ul>
 *
 * <pre>{@code
 * OutboxRelay.builder()...listener(new MicrometerRelayMetrics(registry, "orders")).build();
 * }</pre>
 *
 * Thread-safe.
 */
public final class MicrometerRelayMetrics implements RelayListener {

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
  private final AtomicLong oldestPendingAgeMillis = new AtomicLong();

  /** Registers the relay's meters in {@code registry}, tagged {@code relay=relayName}. */
  public MicrometerRelayMetrics(MeterRegistry registry, String relayName) {
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
            .tag("relay", relay)
            .register(registry);
    this.publishLag =
        Timer.builder("outbox.publish.lag")
            .description("From an event's created_at to its publish")
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
    Gauge.builder(
            "outbox.oldest.pending.age", oldestPendingAgeMillis, v -> v.doubleValue() / 1000.0)
        .description("Age of the oldest pending event (the relay's lag)")
        .baseUnit("seconds")
        .tag("relay", relay)
        .register(registry);
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
  }

  @Override
  public void onWalSlot(WalSlotStats slot) {
    walSlotLagBytes.set(slot.lagBytes());
  }
}

package dev.pgoutbox.relay.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.pgoutbox.relay.OutboxStats;
import dev.pgoutbox.relay.OutboxTableStats;
import dev.pgoutbox.relay.WalSlotStats;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class MicrometerRelayMetricsTest {

  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final MicrometerRelayMetrics metrics = new MicrometerRelayMetrics(registry, "orders");

  private double gauge(String name) {
    return registry.get(name).tag("relay", "orders").gauge().value();
  }

  @Test
  void tableHealthGaugesFollowTheLatestStats() {
    assertThat(gauge("outbox.table.last.autovacuum.age")).as("never vacuumed").isNaN();

    metrics.onStats(
        new OutboxStats(
            5,
            Duration.ofSeconds(3),
            0,
            0,
            Duration.ofMinutes(12),
            new OutboxTableStats(
                300, 100, 7, Instant.now().minusSeconds(60), 81_920, 40_960, 16_384)));

    assertThat(gauge("outbox.oldest.transaction.age")).isEqualTo(720.0);
    assertThat(gauge("outbox.table.dead.tuples")).isEqualTo(100.0);
    assertThat(gauge("outbox.table.dead.tuple.ratio")).isEqualTo(0.25);
    assertThat(gauge("outbox.table.size")).isEqualTo(81_920.0);
    assertThat(gauge("outbox.table.index.size")).isEqualTo(40_960.0);
    assertThat(gauge("outbox.table.pending.index.size")).isEqualTo(16_384.0);
    assertThat(gauge("outbox.table.last.autovacuum.age")).isCloseTo(60.0, within(30.0));
    assertThat(gauge("outbox.events.pending")).isEqualTo(5.0);

    metrics.onStats(new OutboxStats(0, Duration.ZERO, 0, 0, Duration.ZERO, OutboxTableStats.EMPTY));

    assertThat(gauge("outbox.oldest.transaction.age")).isZero();
    assertThat(gauge("outbox.table.dead.tuple.ratio")).isZero();
  }

  @Test
  void heartbeatAgeGrowsUntilTheNextBeat() {
    MutableClock clock = new MutableClock(Instant.parse("2025-06-01T03:00:00Z"));
    SimpleMeterRegistry own = new SimpleMeterRegistry();
    MicrometerRelayMetrics beating = new MicrometerRelayMetrics(own, "orders", clock);
    var age = own.get("outbox.relay.heartbeat.age").tag("relay", "orders").gauge();
    assertThat(age.value()).isZero();

    clock.now = clock.now.plusSeconds(40);
    assertThat(age.value()).isEqualTo(40.0);

    beating.onHeartbeat();
    assertThat(age.value()).isZero();
    clock.now = clock.now.plusMillis(1_500);
    assertThat(age.value()).isEqualTo(1.5);
  }

  @Test
  void slotGaugesSayWhetherTheSlotStreamsAndWhetherItWasLost() {
    assertThat(gauge("outbox.wal.slot.active")).isZero();
    assertThat(gauge("outbox.wal.slot.lost")).isZero();

    metrics.onWalSlot(new WalSlotStats("pgoutbox_orders", true, 10, Duration.ZERO, "reserved"));
    assertThat(gauge("outbox.wal.slot.active")).isEqualTo(1.0);
    assertThat(gauge("outbox.wal.slot.lost")).isZero();

    metrics.onWalSlot(new WalSlotStats("pgoutbox_orders", false, 10, Duration.ZERO, "lost"));
    assertThat(gauge("outbox.wal.slot.active")).isZero();
    assertThat(gauge("outbox.wal.slot.lost")).isEqualTo(1.0);
  }

  @Test
  void slotLagGaugesFollowTheLastSlotReportInBytesAndSeconds() {
    metrics.onWalSlot(
        new WalSlotStats("pgoutbox_orders", true, 4096, Duration.ofMillis(2_500), "reserved"));
    assertThat(gauge("outbox.wal.slot.lag")).isEqualTo(4096.0);
    assertThat(gauge("outbox.wal.slot.lag.seconds")).isEqualTo(2.5);

    metrics.onWalSlot(new WalSlotStats("pgoutbox_orders", true, 0, Duration.ZERO, "reserved"));
    assertThat(gauge("outbox.wal.slot.lag")).isZero();
    assertThat(gauge("outbox.wal.slot.lag.seconds")).isZero();
  }

  @Test
  void batchDurationHasABucketAtFiveSecondsForTheP95Alert() {
    metrics.onBatch(
        new dev.pgoutbox.relay.RelayListener.BatchReport(1, 1, 0, 0, 0, Duration.ofSeconds(6)));
    var histogram =
        registry.get("outbox.batch.duration").tag("relay", "orders").timer().takeSnapshot();
    assertThat(histogram.histogramCounts())
        .anySatisfy(
            bucket -> {
              assertThat(bucket.bucket(java.util.concurrent.TimeUnit.SECONDS)).isEqualTo(5.0);
              assertThat(bucket.count()).isZero();
            });
  }

  private static final class MutableClock extends java.time.Clock {
    Instant now;

    MutableClock(Instant now) {
      this.now = now;
    }

    @Override
    public java.time.ZoneId getZone() {
      return java.time.ZoneOffset.UTC;
    }

    @Override
    public java.time.Clock withZone(java.time.ZoneId zone) {
      return this;
    }

    @Override
    public Instant instant() {
      return now;
    }
  }
}

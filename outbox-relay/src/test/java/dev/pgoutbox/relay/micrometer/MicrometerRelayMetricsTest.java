package dev.pgoutbox.relay.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.pgoutbox.relay.OutboxStats;
import dev.pgoutbox.relay.OutboxTableStats;
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
}

package dev.pgoutbox.relay.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@link MicrometerRelayMetrics} on a relay over a real PostgreSQL. */
class MicrometerRelayMetricsIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  @Test
  void metricsCountPublishedAndFailedEventsAndReadTheBacklog() throws Exception {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    for (int seq = 1; seq <= 3; seq++) {
      EventRows.insert(db.dsl(), "ok", seq);
    }
    EventRows.insert(db.dsl(), "order", "bad", "order.paid", 1);
    RecordingPublisher publisher =
        new RecordingPublisher()
            .decide(
                m ->
                    m.aggregateId().equals("bad")
                        ? PublishResult.permanent("rejected")
                        : PublishResult.published());
    try (OutboxRelay relay =
        OutboxRelay.builder()
            .name("metered")
            .dataSource(db.dataSource())
            .schema(db.schema())
            .publisher(publisher)
            .listener(new MicrometerRelayMetrics(registry, "metered"))
            .config(
                RelayConfig.builder()
                    .pollInterval(Duration.ofMillis(50))
                    .metricsRefreshInterval(Duration.ofMillis(100))
                    .build())
            .build()) {
      relay.start();
      assertThat(
              Eventually.holdsWithin(
                  () ->
                      registry.find("outbox.dead.letters").gauge() != null
                          && registry.find("outbox.dead.letters").gauge().value() == 1.0,
                  10))
          .isTrue();
    }
    assertThat(registry.get("outbox.events.published").tag("relay", "metered").counter().count())
        .isEqualTo(3.0);
    assertThat(
            registry.get("outbox.events.failed").tag("event_type", "order.paid").counter().count())
        .isEqualTo(1.0);
    assertThat(registry.get("outbox.events.dead_lettered").counter().count()).isEqualTo(1.0);
    assertThat(registry.get("outbox.batch.duration").timer().count()).isGreaterThan(0);
    assertThat(registry.get("outbox.events.pending").gauge().value()).isZero();
    assertThat(registry.get("outbox.blocked.aggregates").gauge().value()).isEqualTo(1.0);
  }
}

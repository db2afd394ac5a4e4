package dev.pgoutbox.relay;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.DeliveryChecker;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class CompletionAndOrderingModesIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  @BeforeEach
  void empty() {
    db.execute("truncate outbox_events");
  }

  private OutboxRelay relay(RecordingPublisher publisher, RelayConfig config) {
    return OutboxRelay.builder()
        .dataSource(db.dataSource())
        .schema(db.schema())
        .publisher(publisher)
        .config(config)
        .build();
  }

  @Test
  void deleteCompletionRemovesPublishedRowsAndKeepsFailedOnes() throws Exception {
    for (int seq = 1; seq <= 3; seq++) {
      EventRows.insert(db.dsl(), "ok", seq);
    }
    EventRows.insert(db.dsl(), "failing", 1);
    RecordingPublisher publisher =
        new RecordingPublisher()
            .decide(
                m ->
                    m.aggregateId().equals("failing")
                        ? PublishResult.retryable("down")
                        : PublishResult.published());

    relay(publisher, RelayConfig.builder().completion(Completion.DELETE).build()).runOnce();

    assertThat(db.dsl().fetch(OUTBOX_EVENTS))
        .singleElement()
        .satisfies(r -> assertThat(r.getAggregateId()).isEqualTo("failing"));
  }

  @Test
  void markCompletionKeepsTheHistoryWithProcessedAt() throws Exception {
    EventRows.insert(db.dsl(), "ok", 1);
    relay(new RecordingPublisher(), RelayConfig.ofDefaults()).runOnce();
    assertThat(db.dsl().fetchCount(OUTBOX_EVENTS, OUTBOX_EVENTS.PROCESSED_AT.isNotNull()))
        .isEqualTo(1);
  }

  @Test
  void unorderedModeDoesNotHoldAnAggregateBackBehindAFailure() throws Exception {
    for (int seq = 1; seq <= 4; seq++) {
      EventRows.insert(db.dsl(), "a", seq);
    }
    RecordingPublisher publisher =
        new RecordingPublisher()
            .decide(
                m ->
                    DeliveryChecker.seqOf(m.payload()) == 1
                        ? PublishResult.retryable("down")
                        : PublishResult.published());
    OutboxRelay unordered =
        relay(publisher, RelayConfig.builder().ordering(Ordering.UNORDERED).batchSize(1).build());
    OutboxRelay strict = relay(publisher, RelayConfig.builder().batchSize(1).build());

    assertThat(unordered.runOnce()).isEqualTo(1);
    assertThat(strict.runOnce()).as("strict: the aggregate waits for its first event").isZero();
    while (unordered.runOnce() > 0) {
      // drain what is due
    }

    assertThat(publisher.delivered())
        .extracting(m -> DeliveryChecker.seqOf(m.payload()))
        .as("unordered: the later events went out while the first backs off")
        .containsExactly(2, 3, 4);
  }

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
            .listener(new dev.pgoutbox.relay.micrometer.MicrometerRelayMetrics(registry, "metered"))
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

package dev.pgoutbox.relay;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.DeliveryChecker;
import dev.pgoutbox.testing.TestSchema;
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
}

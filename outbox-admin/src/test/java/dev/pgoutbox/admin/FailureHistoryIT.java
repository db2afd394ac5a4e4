package dev.pgoutbox.admin;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.TestSchema;
import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What {@link OutboxAdmin#event} shows of the failures a relay recorded, and what a retry keeps.
 */
class FailureHistoryIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  @BeforeEach
  void emptyOutbox() {
    db.execute("truncate outbox_events");
  }

  private OutboxRelay relay(RecordingPublisher publisher, RelayConfig config) {
    return OutboxRelay.builder()
        .name("history")
        .dataSource(db.dataSource())
        .schema(db.schema())
        .publisher(publisher)
        .config(config)
        .build();
  }

  /** Moves an event's backoff into the past, as if its retry time had come. */
  private static void makeDue(UUID id) {
    db.execute(
        "update outbox_events set retry_after = now() - interval '1 second' where id = '"
            + id
            + "'");
  }

  @Test
  void everyFailedAttemptIsKeptWithItsReasonAndTimeTheLastTenOnly() throws Exception {
    java.util.concurrent.atomic.AtomicInteger calls =
        new java.util.concurrent.atomic.AtomicInteger();
    RecordingPublisher publisher =
        new RecordingPublisher()
            .decide(
                m ->
                    calls.incrementAndGet() == 12
                        ? PublishResult.permanent("refused for good")
                        : PublishResult.retryable("broker said no, try " + calls.get()));
    OutboxRelay relay = relay(publisher, RelayConfig.builder().maxAttempts(20).build());
    OutboxAdmin admin =
        OutboxAdmin.builder().dataSource(db.dataSource()).schema(db.schema()).build();
    UUID id = EventRows.insert(db.dsl(), "a", 1);
    assertThat(admin.event(id, false).orElseThrow().failures()).as("never failed").isEmpty();

    for (int attempt = 1; attempt <= 12; attempt++) {
      assertThat(relay.runOnce()).isEqualTo(1);
      makeDue(id);
    }

    StoredEvent event = admin.event(id, false).orElseThrow();
    assertThat(event.state()).isEqualTo("dead");
    assertThat(event.failures())
        .as("the newest ten of twelve, oldest first")
        .extracting(StoredEvent.FailedAttempt::attempt)
        .containsExactly(3, 4, 5, 6, 7, 8, 9, 10, 11, 12);
    assertThat(event.failures().get(0).error()).isEqualTo("broker said no, try 3");
    assertThat(event.failures().get(9).error()).isEqualTo("refused for good");
    assertThat(event.failures())
        .extracting(StoredEvent.FailedAttempt::dead)
        .containsExactly(false, false, false, false, false, false, false, false, false, true);
    assertThat(event.failures().get(9).at())
        .isBetween(event.deadAt().minusSeconds(1), event.deadAt().plusSeconds(1));
    assertThat(event.failures())
        .extracting(StoredEvent.FailedAttempt::at)
        .isSortedAccordingTo(java.util.Comparator.naturalOrder());

    assertThat(admin.retry(id)).isTrue();
    StoredEvent retried = admin.event(id, false).orElseThrow();
    assertThat(retried.attempts()).as("a retry resets attempts").isZero();
    assertThat(retried.failures()).as("and keeps the history").hasSize(10);
  }
}

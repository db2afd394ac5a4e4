package dev.pgoutbox.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.TestSchema;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An unordered relay completing by marking claims and marks its events in one statement. The mark
 * is only the batch's own until it commits: attacked here from other sessions while the publish is
 * in flight, with a publish that fails some events, and with a batch abandoned mid-publish.
 */
class UnorderedMarkingClaimIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static final RelayConfig UNORDERED =
      RelayConfig.builder().ordering(Ordering.UNORDERED).batchSize(10).build();

  @BeforeEach
  void empty() {
    db.execute("truncate outbox_events");
  }

  private OutboxRelay relay(RecordingPublisher publisher) {
    return OutboxRelay.builder()
        .dataSource(db.dataSource())
        .schema(db.schema())
        .publisher(publisher)
        .config(UNORDERED)
        .build();
  }

  private static long unprocessed() {
    return db.queryLong("select count(*) from outbox_events where processed_at is null");
  }

  @Test
  void whileTheBatchPublishesOthersSeeItsEventsPendingAndCannotClaimThem() throws Exception {
    for (int seq = 1; seq <= 4; seq++) {
      EventRows.insert(db.dsl(), "a", seq);
    }
    RecordingPublisher gated = new RecordingPublisher().closeGate();
    RecordingPublisher second = new RecordingPublisher();
    OutboxRelay first = relay(gated);

    CompletableFuture<Integer> batch = CompletableFuture.supplyAsync(() -> runOnce(first));
    assertThat(gated.awaitEntered(30)).as("the first batch is publishing").isTrue();

    assertThat(unprocessed())
        .as("the claim's marks are not visible before its commit")
        .isEqualTo(4);
    assertThat(relay(second).runOnce()).as("a second relay skips the locked rows").isZero();

    gated.open();
    assertThat(batch.get(30, TimeUnit.SECONDS)).isEqualTo(4);
    assertThat(unprocessed()).isZero();
    assertThat(second.delivered()).isEmpty();
  }

  @Test
  void eventsWhosePublishFailedAreUnmarkedAndRetriedTheOthersStayDone() throws Exception {
    for (int aggregate = 1; aggregate <= 4; aggregate++) {
      EventRows.insert(db.dsl(), "a" + aggregate, 1);
    }
    EventRows.insert(db.dsl(), "poison", 1);
    RecordingPublisher publisher =
        new RecordingPublisher()
            .decide(
                m ->
                    switch (m.aggregateId()) {
                      case "poison" -> PublishResult.permanent("refused");
                      case "a2" -> PublishResult.retryable("busy");
                      default -> PublishResult.published();
                    });

    assertThat(relay(publisher).runOnce()).isEqualTo(5);

    assertThat(
            db.queryString(
                "select concat_ws(' ', processed_at is null, attempts, retry_after is not null,"
                    + " last_error, dead_at is null) from outbox_events where aggregate_id = 'a2'"))
        .as("the retryable failure is pending again, with its backoff")
        .isEqualTo("t 1 t busy t");
    assertThat(
            db.queryString(
                "select concat_ws(' ', processed_at is null, attempts, last_error, dead_at is not"
                    + " null) from outbox_events where aggregate_id = 'poison'"))
        .as("the refused event is a dead letter, not processed")
        .isEqualTo("t 1 refused t");
    assertThat(
            db.queryString(
                "select string_agg(aggregate_id, ',' order by aggregate_id) from outbox_events"
                    + " where processed_at is not null and attempts = 0"))
        .isEqualTo("a1,a3,a4");
  }

  @Test
  void aClaimMarksNoMoreThanItsBatchWhateverThePlan() throws Exception {
    // Five rows and no statistics: the plan in which PostgreSQL ran the claim's subquery again for
    // each row it joined (locking and marking all five for a batch of one) is the cheap one here.
    for (int seq = 1; seq <= 5; seq++) {
      EventRows.insert(db.dsl(), "a", seq);
    }
    RecordingPublisher publisher = new RecordingPublisher();
    OutboxRelay one =
        OutboxRelay.builder()
            .dataSource(db.dataSource())
            .schema(db.schema())
            .publisher(publisher)
            .config(RelayConfig.builder().ordering(Ordering.UNORDERED).batchSize(1).build())
            .build();

    assertThat(one.runOnce()).isEqualTo(1);
    assertThat(unprocessed()).isEqualTo(4);
    assertThat(publisher.delivered()).hasSize(1);
  }

  @Test
  void aBatchAbandonedMidPublishLeavesEveryEventPending() throws Exception {
    for (int seq = 1; seq <= 3; seq++) {
      EventRows.insert(db.dsl(), "a", seq);
    }
    RecordingPublisher hanging = new RecordingPublisher().neverAnswer();
    OutboxRelay relay = relay(hanging);
    relay.start();
    assertThat(hanging.awaitEntered(30)).isTrue();

    relay.stop(Duration.ofMillis(100));

    assertThat(unprocessed()).as("the batch rolled back, marks and all").isEqualTo(3);
    RecordingPublisher next = new RecordingPublisher();
    while (relay(next).runOnce() > 0) {
      // drain
    }
    assertThat(next.delivered()).hasSize(3);
    assertThat(unprocessed()).isZero();
  }

  private static int runOnce(OutboxRelay relay) {
    try {
      return relay.runOnce();
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}

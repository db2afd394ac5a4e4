package dev.pgoutbox.relay;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.db.jooq.tables.records.OutboxEventsRecord;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.testing.DeliveryChecker;
import dev.pgoutbox.testing.TestSchema;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A batch that passes the publish timeout keeps every answer that arrived, charges an attempt only
 * to the unanswered head of each aggregate, cancels the work still in flight, and the time spent
 * inside {@code publish()} itself is bounded too.
 */
class PublishTimeoutIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static final RelayConfig SHORT_TIMEOUT =
      RelayConfig.builder().publishTimeout(Duration.ofMillis(400)).build();

  @BeforeEach
  void emptyOutbox() {
    db.execute("truncate outbox_events");
  }

  private static OutboxRelay relay(Publisher publisher) {
    return OutboxRelay.builder()
        .name("timeout")
        .dataSource(db.dataSource())
        .schema(db.schema())
        .publisher(publisher)
        .config(SHORT_TIMEOUT)
        .build();
  }

  private static OutboxEventsRecord row(UUID id) {
    return db.dsl().selectFrom(OUTBOX_EVENTS).where(OUTBOX_EVENTS.ID.eq(id)).fetchSingle();
  }

  /** A stage that answers some events at once and never the others, and tells what it has. */
  static final class HalfAnswered extends CompletableFuture<List<PublishResult>>
      implements PartialResults {
    private final List<@Nullable PublishResult> answers;
    final CountDownLatch cancelled = new CountDownLatch(1);

    HalfAnswered(List<@Nullable PublishResult> answers) {
      this.answers = answers;
    }

    @Override
    public synchronized List<@Nullable PublishResult> answeredSoFar() {
      return new ArrayList<>(answers);
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
      cancelled.countDown();
      return super.cancel(mayInterruptIfRunning);
    }
  }

  @Test
  void aTimeoutKeepsTheAnswersThatArrivedAndChargesOnlyTheUnansweredHeads() throws Exception {
    UUID a1 = EventRows.insert(db.dsl(), "a", 1);
    UUID a2 = EventRows.insert(db.dsl(), "a", 2);
    UUID b1 = EventRows.insert(db.dsl(), "b", 1);
    UUID b2 = EventRows.insert(db.dsl(), "b", 2);
    UUID b3 = EventRows.insert(db.dsl(), "b", 3);
    UUID c1 = EventRows.insert(db.dsl(), "c", 1);
    UUID c2 = EventRows.insert(db.dsl(), "c", 2);
    List<HalfAnswered> stages = new ArrayList<>();
    Publisher publisher =
        batch -> {
          // Aggregate a is answered in full, b up to b1; b2, b3 and all of c never are.
          List<@Nullable PublishResult> answers = new ArrayList<>();
          for (OutboxMessage m : batch) {
            int seq = DeliveryChecker.seqOf(m.payload());
            boolean answered =
                m.aggregateId().equals("a") || m.aggregateId().equals("b") && seq == 1;
            answers.add(answered ? PublishResult.published() : null);
          }
          HalfAnswered stage = new HalfAnswered(answers);
          stages.add(stage);
          return stage;
        };

    assertThat(relay(publisher).runOnce()).isEqualTo(7);

    for (UUID done : List.of(a1, a2, b1)) {
      assertThat(row(done).getProcessedAt()).as("answered published: kept").isNotNull();
      assertThat(row(done).getAttempts()).isZero();
    }
    for (UUID head : List.of(b2, c1)) {
      assertThat(row(head).getProcessedAt()).isNull();
      assertThat(row(head).getAttempts()).as("unanswered head: charged").isEqualTo(1);
      assertThat(row(head).getLastError()).contains("publish timed out");
    }
    for (UUID behind : List.of(b3, c2)) {
      assertThat(row(behind).getAttempts()).as("behind an unanswered head: uncharged").isZero();
      assertThat(row(behind).getRetryAfter()).isNull();
    }
    assertThat(stages.get(0).cancelled.await(5, TimeUnit.SECONDS))
        .as("the stage still in flight is cancelled")
        .isTrue();
  }

  @Test
  void timeSpentInsidePublishIsBoundedAndTheCallIsInterrupted() throws Exception {
    UUID x1 = EventRows.insert(db.dsl(), "x", 1);
    UUID x2 = EventRows.insert(db.dsl(), "x", 2);
    CountDownLatch interrupted = new CountDownLatch(1);
    CountDownLatch never = new CountDownLatch(1);
    Publisher blocking =
        new Publisher() {
          @Override
          public CompletionStage<List<PublishResult>> publish(List<OutboxMessage> batch) {
            try {
              never.await(); // a client blocking on metadata, inside publish() itself
            } catch (InterruptedException e) {
              interrupted.countDown();
            }
            return CompletableFuture.completedFuture(List.of());
          }
        };
    OutboxRelay relay = relay(blocking);

    CompletableFuture<Integer> run = new CompletableFuture<>();
    Thread.ofVirtual()
        .start(
            () -> {
              try {
                run.complete(relay.runOnce());
              } catch (Throwable t) {
                run.completeExceptionally(t);
              }
            });
    try {
      assertThat(run.get(10, TimeUnit.SECONDS)).isEqualTo(2);
    } finally {
      never.countDown();
    }
    assertThat(interrupted.await(5, TimeUnit.SECONDS)).as("publish() was interrupted").isTrue();
    assertThat(row(x1).getAttempts()).isEqualTo(1);
    assertThat(row(x1).getLastError()).contains("did not return within");
    assertThat(row(x2).getAttempts()).isZero();
  }
}

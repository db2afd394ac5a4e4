package dev.pgoutbox.relay;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.testing.TestSchema;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What a custom publisher answers is read as it is, whatever list type it answers with, and an
 * answer that does not fit the batch fails each event of the batch (retried with backoff), never
 * the relay. A publisher answering with {@code List.of(...)}, the first list a Java developer
 * writes, used to stop the relay for good: checking the answer for nulls threw.
 */
class PublisherAnswersIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  @BeforeEach
  void emptyOutbox() {
    db.execute("truncate outbox_events");
  }

  @Test
  void anAnswerInAnImmutableListIsRead() throws Exception {
    EventRows.insert(db.dsl(), "x", 1);
    EventRows.insert(db.dsl(), "x", 2);
    EventRows.insert(db.dsl(), "y", 1);
    List<OutboxMessage> sent = new CopyOnWriteArrayList<>();
    Publisher immutableAnswers =
        batch -> {
          sent.addAll(batch);
          PublishResult[] answers = new PublishResult[batch.size()];
          Arrays.fill(answers, PublishResult.published());
          return CompletableFuture.completedFuture(List.of(answers));
        };

    int published = relay(immutableAnswers).runOnce();

    assertThat(published).isEqualTo(3);
    assertThat(sent).hasSize(3);
    assertThat(pending()).isZero();
  }

  @Test
  void anAnswerThatDoesNotFitTheBatchFailsEachEventAndTheyAreRetried() throws Exception {
    EventRows.insert(db.dsl(), "x", 1);
    EventRows.insert(db.dsl(), "x", 2);
    EventRows.insert(db.dsl(), "y", 1);
    List<Function<Integer, List<PublishResult>>> malformed =
        List.of(
            size -> null,
            size -> List.copyOf(answers(size - 1)),
            size -> answers(size + 1),
            size -> {
              List<PublishResult> withNull = answers(size);
              withNull.set(size - 1, null);
              return withNull;
            });
    int attempt = 0;
    for (Function<Integer, List<PublishResult>> answer : malformed) {
      attempt++;
      db.execute("update outbox_events set retry_after = null");
      Publisher liar = batch -> CompletableFuture.completedFuture(answer.apply(batch.size()));

      relay(liar).runOnce();

      assertThat(
              db.dsl()
                  .selectDistinct(OUTBOX_EVENTS.LAST_ERROR)
                  .from(OUTBOX_EVENTS)
                  .where(OUTBOX_EVENTS.ATTEMPTS.gt(0))
                  .fetch(OUTBOX_EVENTS.LAST_ERROR))
          .containsExactly("publisher answered a malformed result list");
      assertThat(pending()).as("nothing marked after malformed answer %s", attempt).isEqualTo(3);
      assertThat(db.queryLong("select max(attempts) from outbox_events")).isEqualTo(attempt);
    }

    db.execute("update outbox_events set retry_after = null");
    List<OutboxMessage> sent = new CopyOnWriteArrayList<>();
    relay(
            batch -> {
              sent.addAll(batch);
              return CompletableFuture.completedFuture(answers(batch.size()));
            })
        .runOnce();

    assertThat(pending()).isZero();
    assertThat(sent)
        .extracting(m -> m.aggregateId() + m.payload().replaceAll("\\D", ""))
        .containsExactly("x1", "x2", "y1");
  }

  private static List<PublishResult> answers(int size) {
    List<PublishResult> answers = new ArrayList<>();
    for (int i = 0; i < size; i++) {
      answers.add(PublishResult.published());
    }
    return answers;
  }

  private static OutboxRelay relay(Publisher publisher) {
    return OutboxRelay.builder()
        .name("answers")
        .dataSource(db.dataSource())
        .schema(db.schema())
        .publisher(publisher)
        .build();
  }

  private static long pending() {
    return db.queryLong("select count(*) from outbox_events where processed_at is null");
  }
}

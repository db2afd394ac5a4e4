package dev.pgoutbox.relay;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.db.jooq.tables.records.OutboxEventsRecord;
import dev.pgoutbox.relay.testing.DeadRows;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.TestSchema;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * One event can never stall the relay: whatever goes wrong with one event (an absurd retry hint, a
 * hand-written row, an error while deciding or recording its outcome) is that event's own failure,
 * and the good events of other aggregates in the same batch are published.
 */
class FailuresCannotStallIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  @BeforeEach
  void emptyOutbox() {
    db.execute("truncate outbox_events");
    db.execute("drop trigger if exists hostile on outbox_events");
  }

  private static OutboxRelay relay(Publisher publisher, RelayConfig config) {
    return OutboxRelay.builder()
        .name("stall")
        .dataSource(db.dataSource())
        .schema(db.schema())
        .publisher(publisher)
        .config(config)
        .build();
  }

  private static OutboxEventsRecord row(UUID id) {
    return db.dsl().selectFrom(OUTBOX_EVENTS).where(OUTBOX_EVENTS.ID.eq(id)).fetchSingle();
  }

  private static OffsetDateTime dbNow() {
    return db.dsl().select(org.jooq.impl.DSL.currentOffsetDateTime()).fetchSingle().value1();
  }

  @Test
  void anAbsurdRetryAfterIsCutToTheMaximumHintAndTheOthersFlow() throws Exception {
    UUID poison = EventRows.insert(db.dsl(), "poison", 1);
    UUID good = EventRows.insert(db.dsl(), "good", 1);
    RecordingPublisher publisher =
        new RecordingPublisher()
            .decide(
                m ->
                    m.aggregateId().equals("poison")
                        ? PublishResult.retryable(
                            "429 Retry-After", Duration.ofSeconds(Long.MAX_VALUE))
                        : PublishResult.published());
    OutboxRelay relay =
        relay(publisher, RelayConfig.builder().maxRetryHint(Duration.ofMinutes(5)).build());

    assertThat(relay.runOnce()).isEqualTo(2);

    assertThat(row(good).getProcessedAt()).isNotNull();
    OutboxEventsRecord p = row(poison);
    assertThat(p.getAttempts()).isEqualTo(1);
    assertThat(p.getDeadAt()).isNull();
    assertThat(p.getRetryAfter())
        .isBetween(dbNow().plusMinutes(4), dbNow().plusMinutes(5).plusSeconds(5));
  }

  @Test
  void handWrittenRowsWithHostileAttemptsAreDeadLetteredAndTheOthersFlow() throws Exception {
    UUID negative = EventRows.insert(db.dsl(), "negative", 1);
    UUID huge = EventRows.insert(db.dsl(), "huge", 1);
    UUID good = EventRows.insert(db.dsl(), "good", 1);
    UUID behind = EventRows.insert(db.dsl(), "negative", 2);
    db.execute("update outbox_events set attempts = -3 where id = '" + negative + "'");
    db.execute("update outbox_events set attempts = 2147483647 where id = '" + huge + "'");
    RecordingPublisher publisher = new RecordingPublisher();

    relay(publisher, RelayConfig.ofDefaults()).runOnce();

    assertThat(row(good).getProcessedAt()).isNotNull();
    for (UUID hostile : new UUID[] {negative, huge}) {
      OutboxEventsRecord r = row(hostile);
      assertThat(r.getDeadAt()).as("dead-lettered").isNotNull();
      assertThat(r.getProcessedAt()).isNull();
      assertThat(r.getLastError()).startsWith("unusable row: attempts is ");
    }
    assertThat(row(behind).getProcessedAt()).as("held behind its dead head").isNull();
    assertThat(publisher.delivered())
        .extracting(OutboxMessage::aggregateId)
        .containsExactly("good");

    // The operator's retry makes the row usable again.
    assertThat(DeadRows.retry(db.dsl(), huge)).isTrue();
    relay(publisher, RelayConfig.ofDefaults()).runOnce();
    assertThat(row(huge).getProcessedAt()).isNotNull();
  }

  @Test
  void anErrorWhileDecidingOneOutcomeDeadLettersThatEventOnly() throws Exception {
    UUID failing = EventRows.insert(db.dsl(), "failing", 1);
    UUID good = EventRows.insert(db.dsl(), "good", 1);
    RecordingPublisher publisher =
        new RecordingPublisher()
            .decide(
                m ->
                    m.aggregateId().equals("failing")
                        ? PublishResult.retryable("broker hiccup")
                        : PublishResult.published());
    RelayConfig brokenBackoff =
        RelayConfig.builder()
            .backoff(
                attempt -> {
                  throw new IllegalStateException("backoff broke");
                })
            .build();

    assertThat(relay(publisher, brokenBackoff).runOnce()).isEqualTo(2);

    assertThat(row(good).getProcessedAt()).isNotNull();
    OutboxEventsRecord f = row(failing);
    assertThat(f.getDeadAt()).isNotNull();
    assertThat(f.getLastError()).contains("could not decide").contains("backoff broke");
  }

  @Test
  void anErrorWhileRecordingOneFailureDeadLettersThatEventOnly() throws Exception {
    // A hostile trigger refuses to record this one failure as a retry.
    db.execute(
        "create or replace function refuse() returns trigger language plpgsql as $$ begin"
            + " raise exception 'refused by a hostile trigger'; end $$");
    db.execute(
        "create trigger hostile before update on outbox_events for each row when"
            + " (new.last_error = 'refuse me' and new.dead_at is null) execute function refuse()");
    UUID refused = EventRows.insert(db.dsl(), "refused", 1);
    UUID retried = EventRows.insert(db.dsl(), "retried", 1);
    UUID good = EventRows.insert(db.dsl(), "good", 1);
    RecordingPublisher publisher =
        new RecordingPublisher()
            .decide(
                m ->
                    switch (m.aggregateId()) {
                      case "refused" -> PublishResult.retryable("refuse me");
                      case "retried" -> PublishResult.retryable("broker hiccup");
                      default -> PublishResult.published();
                    });

    assertThat(relay(publisher, RelayConfig.ofDefaults()).runOnce()).isEqualTo(3);

    assertThat(row(good).getProcessedAt()).isNotNull();
    assertThat(row(retried).getAttempts()).isEqualTo(1);
    assertThat(row(retried).getDeadAt()).isNull();
    OutboxEventsRecord r = row(refused);
    assertThat(r.getDeadAt()).isNotNull();
    assertThat(r.getLastError())
        .contains("could not record")
        .contains("refused by a hostile trigger")
        .contains("refuse me");
  }
}

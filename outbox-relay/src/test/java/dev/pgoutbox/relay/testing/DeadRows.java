package dev.pgoutbox.relay.testing;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_DEAD_LETTERS;
import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;

import java.time.OffsetDateTime;
import java.util.List;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.JSONB;
import org.jspecify.annotations.Nullable;

/**
 * The dead letters and the operator's retry in plain SQL, for the relay's tests: they cannot use
 * {@code OutboxAdmin} (pgoutbox-admin depends on the relay), whose own tests cover it.
 */
public final class DeadRows {

  private DeadRows() {}

  /** A dead letter as the view {@code outbox_dead_letters} shows it. */
  public record Dead(
      UUID id,
      long position,
      String aggregateType,
      String aggregateId,
      String eventType,
      String payload,
      int attempts,
      @Nullable String lastError) {}

  /** The dead letters, oldest first. */
  public static List<Dead> list(DSLContext dsl) {
    return dsl.selectFrom(OUTBOX_DEAD_LETTERS)
        .orderBy(OUTBOX_DEAD_LETTERS.POSITION)
        .fetch(
            r -> {
              JSONB payload = r.getPayload();
              return new Dead(
                  r.getId(),
                  r.getPosition(),
                  r.getAggregateType(),
                  r.getAggregateId(),
                  r.getEventType(),
                  payload == null ? "null" : payload.data(),
                  r.getAttempts(),
                  r.getLastError());
            });
  }

  /**
   * What an operator's retry of one event does: an unpublished event that is dead or backing off is
   * due at once, attempts reset. Returns whether it was such an event.
   */
  public static boolean retry(DSLContext dsl, UUID id) {
    return dsl.update(OUTBOX_EVENTS)
            .set(OUTBOX_EVENTS.ATTEMPTS, 0)
            .set(OUTBOX_EVENTS.RETRY_AFTER, (OffsetDateTime) null)
            .set(OUTBOX_EVENTS.DEAD_AT, (OffsetDateTime) null)
            .where(OUTBOX_EVENTS.ID.eq(id))
            .and(OUTBOX_EVENTS.PROCESSED_AT.isNull())
            .and(OUTBOX_EVENTS.DEAD_AT.isNotNull().or(OUTBOX_EVENTS.RETRY_AFTER.isNotNull()))
            .execute()
        > 0;
  }
}

package dev.pgoutbox.relay.internal;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;

import dev.pgoutbox.relay.Completion;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.Query;
import org.jooq.impl.DSL;

/** Records the outcome of a batch inside the claim transaction, through the generated tables. */
public final class Marker {

  private final Completion completion;

  /** A marker that completes published events as {@code completion} says. */
  public Marker(Completion completion) {
    this.completion = completion;
  }

  /**
   * Marks (or deletes) every published event in one statement. Rows are found by {@code position}
   * through the pending index, whose neighbouring entries share pages, rather than by random ids.
   */
  public void published(DSLContext tx, List<Long> positions) {
    if (positions.isEmpty()) {
      return;
    }
    Long[] array = positions.toArray(Long[]::new);
    if (completion == Completion.DELETE) {
      tx.deleteFrom(OUTBOX_EVENTS)
          .where(OUTBOX_EVENTS.POSITION.eq(DSL.any(array)))
          .and(OUTBOX_EVENTS.PROCESSED_AT.isNull())
          .execute();
    } else {
      tx.update(OUTBOX_EVENTS)
          .set(OUTBOX_EVENTS.PROCESSED_AT, Sql.clockTimestamp())
          .where(OUTBOX_EVENTS.POSITION.eq(DSL.any(array)))
          .and(OUTBOX_EVENTS.PROCESSED_AT.isNull())
          .execute();
    }
  }

  /** Records failed attempts: backoff into {@code retry_after}, or {@code dead_at}. */
  public void failed(DSLContext tx, List<Failure> failures) {
    if (failures.isEmpty()) {
      return;
    }
    List<Query> updates = new ArrayList<>(failures.size());
    for (Failure f : failures) {
      updates.add(
          tx.update(OUTBOX_EVENTS)
              .set(OUTBOX_EVENTS.ATTEMPTS, f.attempts())
              .set(OUTBOX_EVENTS.LAST_ERROR, f.reason())
              .set(
                  OUTBOX_EVENTS.RETRY_AFTER,
                  f.dead()
                      ? DSL.val(null, OUTBOX_EVENTS.RETRY_AFTER)
                      : Sql.clockTimestampPlus(f.retryIn()))
              .set(
                  OUTBOX_EVENTS.DEAD_AT,
                  f.dead() ? Sql.clockTimestamp() : DSL.val(null, OUTBOX_EVENTS.DEAD_AT))
              .where(OUTBOX_EVENTS.ID.eq(f.id())));
    }
    if (updates.size() == 1) {
      updates.get(0).execute();
    } else {
      tx.batch(updates).execute();
    }
  }

  /**
   * One failed attempt to record.
   *
   * @param id the event
   * @param attempts failed attempts including this one
   * @param reason truncated reason for {@code last_error}
   * @param dead whether to dead-letter it
   * @param retryIn backoff before the next attempt (ignored when dead)
   */
  public record Failure(UUID id, int attempts, String reason, boolean dead, Duration retryIn) {}
}

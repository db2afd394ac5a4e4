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
   * Only rows still unprocessed are touched; the claim locked them, so all of them should be.
   *
   * @return rows marked; fewer than {@code positions} means some were no longer this relay's
   */
  public int published(DSLContext tx, List<Long> positions) {
    if (positions.isEmpty()) {
      return 0;
    }
    Long[] array = positions.toArray(Long[]::new);
    if (completion == Completion.DELETE) {
      return tx.deleteFrom(OUTBOX_EVENTS)
          .where(OUTBOX_EVENTS.POSITION.eq(DSL.any(array)))
          .and(OUTBOX_EVENTS.PROCESSED_AT.isNull())
          .execute();
    } else {
      return tx.update(OUTBOX_EVENTS)
          .set(OUTBOX_EVENTS.PROCESSED_AT, Sql.clockTimestamp())
          .where(OUTBOX_EVENTS.POSITION.eq(DSL.any(array)))
          .and(OUTBOX_EVENTS.PROCESSED_AT.isNull())
          .execute();
    }
  }

  /**
   * Records failed attempts: backoff into {@code retry_after}, or {@code dead_at}; only on rows
   * still unprocessed.
   *
   * @return rows recorded; fewer than {@code failures} means some were no longer this relay's
   */
  public int failed(DSLContext tx, List<Failure> failures) {
    if (failures.isEmpty()) {
      return 0;
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
              .where(OUTBOX_EVENTS.ID.eq(f.id()))
              .and(OUTBOX_EVENTS.PROCESSED_AT.isNull()));
    }
    if (updates.size() == 1) {
      return updates.get(0).execute();
    }
    int recorded = 0;
    for (int count : tx.batch(updates).execute()) {
      recorded += Math.max(0, count);
    }
    return recorded;
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

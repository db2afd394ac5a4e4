package dev.pgoutbox.relay.internal;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static org.jooq.impl.DSL.param;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.UUID;
import org.jooq.Param;
import org.jooq.Query;
import org.jooq.impl.DSL;
import org.postgresql.PGStatement;

/**
 * The statements that record a batch's outcome in one outbox schema, built from the generated
 * tables and rendered once (see {@link RenderedStatement}); {@link Marker} binds and runs them.
 * Each touches only rows still unprocessed.
 */
public final class MarkStatements {

  /** {@link #published} and {@link #deleted}, bind 1: the positions, a {@code bigint[]}. */
  public static final int PUBLISHED_POSITIONS = 1;

  /** {@link #retry} and {@link #dead}, bind 1: failed attempts including this one. */
  public static final int FAILED_ATTEMPTS = 1;

  /** {@link #retry} and {@link #dead}, bind 2: the reason, for {@code last_error}. */
  public static final int FAILED_REASON = 2;

  /** {@link #retry}, bind 3: the backoff in milliseconds. */
  public static final int RETRY_IN_MILLIS = 3;

  /** {@link #retry}, binds 4 and 5: the attempt and reason again, for {@code error_history}. */
  public static final int RETRY_HISTORY_ATTEMPT = 4;

  public static final int RETRY_HISTORY_REASON = 5;

  /** {@link #retry}, bind 6: the event's id. */
  public static final int RETRY_ID = 6;

  /** {@link #dead}, binds 3 and 4: the attempt and reason again, for {@code error_history}. */
  public static final int DEAD_HISTORY_ATTEMPT = 3;

  public static final int DEAD_HISTORY_REASON = 4;

  /** {@link #dead}, bind 5: the event's id. */
  public static final int DEAD_ID = 5;

  private MarkStatements() {}

  /** Marks the published events processed ({@code Completion.MARK_PROCESSED}). */
  public static RenderedStatement published(String schema) {
    Param<Long[]> positions = param("positions", Long[].class);
    Query update =
        DSL.update(OUTBOX_EVENTS)
            .set(OUTBOX_EVENTS.PROCESSED_AT, Sql.clockTimestamp())
            .where(OUTBOX_EVENTS.POSITION.in(unnested(positions)))
            .and(OUTBOX_EVENTS.PROCESSED_AT.isNull());
    return RenderedStatement.render(schema, update, "positions");
  }

  /** Deletes the published events ({@code Completion.DELETE}). */
  public static RenderedStatement deleted(String schema) {
    Param<Long[]> positions = param("positions", Long[].class);
    Query delete =
        DSL.deleteFrom(OUTBOX_EVENTS)
            .where(OUTBOX_EVENTS.POSITION.in(unnested(positions)))
            .and(OUTBOX_EVENTS.PROCESSED_AT.isNull());
    return RenderedStatement.render(schema, delete, "positions");
  }

  /** The positions as rows, each looked up on its own: see {@link #prepare}. */
  private static org.jooq.Select<org.jooq.Record1<Long>> unnested(Param<Long[]> positions) {
    return DSL.select(DSL.function(DSL.name("pg_catalog", "unnest"), Long.class, positions));
  }

  /** A failed attempt to retry after a backoff, appended to {@code error_history}. */
  public static RenderedStatement retry(String schema) {
    Param<Integer> attempts = param("attempts", Integer.class);
    Param<String> reason = param("reason", String.class);
    Param<Long> retryInMillis = param("retryInMillis", Long.class);
    Param<UUID> id = param("id", UUID.class);
    Query update =
        DSL.update(OUTBOX_EVENTS)
            .set(OUTBOX_EVENTS.ATTEMPTS, attempts)
            .set(OUTBOX_EVENTS.LAST_ERROR, reason)
            .set(OUTBOX_EVENTS.RETRY_AFTER, Sql.clockTimestampPlusMillis(retryInMillis))
            .set(OUTBOX_EVENTS.DEAD_AT, DSL.inline((OffsetDateTime) null, OUTBOX_EVENTS.DEAD_AT))
            .set(
                OUTBOX_EVENTS.ERROR_HISTORY,
                Sql.errorHistoryAppended(
                    param("historyAttempt", Integer.class),
                    param("historyReason", String.class),
                    false))
            .where(OUTBOX_EVENTS.ID.eq(id))
            .and(OUTBOX_EVENTS.PROCESSED_AT.isNull());
    return RenderedStatement.render(
        schema,
        update,
        "attempts",
        "reason",
        "retryInMillis",
        "historyAttempt",
        "historyReason",
        "id");
  }

  /** A failed attempt that dead-letters the event, appended to {@code error_history}. */
  public static RenderedStatement dead(String schema) {
    Param<Integer> attempts = param("attempts", Integer.class);
    Param<String> reason = param("reason", String.class);
    Param<UUID> id = param("id", UUID.class);
    Query update =
        DSL.update(OUTBOX_EVENTS)
            .set(OUTBOX_EVENTS.ATTEMPTS, attempts)
            .set(OUTBOX_EVENTS.LAST_ERROR, reason)
            .set(
                OUTBOX_EVENTS.RETRY_AFTER,
                DSL.inline((OffsetDateTime) null, OUTBOX_EVENTS.RETRY_AFTER))
            .set(OUTBOX_EVENTS.DEAD_AT, Sql.clockTimestamp())
            .set(
                OUTBOX_EVENTS.ERROR_HISTORY,
                Sql.errorHistoryAppended(
                    param("historyAttempt", Integer.class),
                    param("historyReason", String.class),
                    true))
            .where(OUTBOX_EVENTS.ID.eq(id))
            .and(OUTBOX_EVENTS.PROCESSED_AT.isNull());
    return RenderedStatement.render(
        schema, update, "attempts", "reason", "historyAttempt", "historyReason", "id");
  }

  /**
   * Prepares {@link #published} or {@link #deleted} to be planned at every execution: a plan kept
   * from when the table was small scanned all of {@code pending_aggregate_idx} per position, ever
   * slower as the backlog grew (docs/wal-completion.md).
   */
  public static PreparedStatement prepare(Connection connection, RenderedStatement statement)
      throws SQLException {
    PreparedStatement prepared = connection.prepareStatement(statement.sql());
    prepared.unwrap(PGStatement.class).setPrepareThreshold(0);
    return prepared;
  }
}

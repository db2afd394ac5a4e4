package dev.pgoutbox.relay.internal;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static org.jooq.impl.DSL.currentOffsetDateTime;
import static org.jooq.impl.DSL.field;
import static org.jooq.impl.DSL.name;
import static org.jooq.impl.DSL.select;

import dev.pgoutbox.db.jooq.tables.OutboxEvents;
import java.util.List;
import org.jooq.Condition;
import org.jooq.Field;
import org.jooq.Param;
import org.jooq.Record;
import org.jooq.Select;
import org.jooq.SelectField;
import org.jooq.SelectSelectStep;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;

/**
 * The conditions and columns the claim statements of {@link ClaimStatements} share: the heads
 * search, the bounds of a run, the due test and the claimed columns.
 */
final class ClaimParts {

  private ClaimParts() {}

  /** {@link ClaimStatements#HEADS_SEARCHED}: the rows of the {@code heads} step. */
  static Field<Integer> headsSearched(Table<?> heads) {
    return field(select(DSL.count()).from(heads)).as("heads_searched");
  }

  /**
   * The heads search both strict claims share: pending due rows from {@code scanFrom} on, oldest
   * first, with no earlier pending row in their aggregate, each locked {@code FOR UPDATE SKIP
   * LOCKED}, at most {@code headsLimit}.
   */
  static <R extends Record> Select<R> headsSearch(
      SelectSelectStep<R> select,
      OutboxEvents e,
      String schema,
      Param<Long> scanFrom,
      Param<Integer> headsLimit,
      boolean releaseDeadAggregates,
      boolean parkedOnly) {
    OutboxEvents same = OUTBOX_EVENTS.as("p");
    // The aggregate's pending rows before the candidate, from the candidate backwards: an equality
    // on the type and a lower bound on the id stop the scan at the aggregate's start, and the row
    // comparison starts it just below the candidate.
    Condition earlierPending =
        same.PROCESSED_AT
            .isNull()
            .and(same.AGGREGATE_TYPE.eq(e.AGGREGATE_TYPE))
            .and(same.AGGREGATE_ID.ge(e.AGGREGATE_ID))
            .and(DSL.row(same.AGGREGATE_ID, same.POSITION).lt(DSL.row(e.AGGREGATE_ID, e.POSITION)));
    if (releaseDeadAggregates) {
      earlierPending = earlierPending.and(same.DEAD_AT.isNull());
    }
    if (parkedOnly) {
      // Parked rows the reader read from the slot are ordered by commit (earlierParked below); a
      // lower position says nothing of their order. Any other pending row with a lower position
      // (published by the reader and not yet completed, committed and not read yet, parked by hand
      // and not read yet) still holds the aggregate back: its place in commit order is unknown.
      earlierPending = earlierPending.and(DSL.not(commitOrdered(same)));
    }
    // A head is a candidate with no earlier pending row in its aggregate, asked by reading the
    // aggregate index backwards from the candidate. Published rows leave their entries before the
    // aggregate's first pending row until vacuum removes them (all of them while a transaction
    // holds vacuum back), so a candidate that is not a head finds its predecessor at the first
    // entry, and only a head steps over its aggregate's dead entries. Read forwards from the
    // aggregate's start, every candidate stepped over them, and in a backlog most candidates are
    // not heads. The order named in full (type, id, position) is one only the aggregate index
    // gives. Asked as NOT EXISTS, PostgreSQL chose a sequential scan per candidate once the table
    // was analysed with few aggregates; asked as min(), it walked the position index from its
    // start filtering for the aggregate once the statistics counted next to nothing pending (see
    // inAggregateFrom).
    Field<Integer> earlierRow =
        field(
            select(DSL.inline(1))
                .from(same)
                .where(earlierPending)
                .orderBy(same.AGGREGATE_TYPE.desc(), same.AGGREGATE_ID.desc(), same.POSITION.desc())
                .limit(DSL.inline(1)));
    Condition noEarlierRow = earlierRow.isNull();
    if (parkedOnly) {
      // The parked rows of the aggregate before the candidate in commit order (commit_lsn, then
      // position), read backwards from the candidate in outbox_events_parked_order_idx. Not only
      // due ones: one backing off holds back those committed after it.
      OutboxEvents before = OUTBOX_EVENTS.as("b");
      Condition earlierParked =
          before
              .PROCESSED_AT
              .isNull()
              .and(before.PARKED.isTrue())
              .and(before.AGGREGATE_TYPE.eq(e.AGGREGATE_TYPE))
              .and(before.AGGREGATE_ID.eq(e.AGGREGATE_ID))
              .and(
                  DSL.row(before.COMMIT_LSN, before.POSITION)
                      .lt(DSL.row(e.COMMIT_LSN, e.POSITION)));
      if (releaseDeadAggregates) {
        earlierParked = earlierParked.and(before.DEAD_AT.isNull());
      }
      Field<Integer> earlierParkedRow =
          field(
              select(DSL.inline(1))
                  .from(before)
                  .where(earlierParked)
                  .orderBy(
                      before.AGGREGATE_TYPE.desc(),
                      before.AGGREGATE_ID.desc(),
                      before.COMMIT_LSN.desc(),
                      before.POSITION.desc())
                  .limit(DSL.inline(1)));
      // Asked first, and the probe above only for the candidates it leaves (a CASE fixes the
      // order, which PostgreSQL otherwise picks by cost): in a hot aggregate's parked backlog every
      // candidate but the head finds its parked predecessor at once, where the probe above would
      // step back over all the aggregate's parked rows below it.
      noEarlierRow =
          DSL.condition(
              DSL.when(earlierParkedRow.isNull(), DSL.field(noEarlierRow))
                  .otherwise(DSL.inline(false)));
    }
    // A candidate whose aggregate another relay holds is skipped before the probe: the probe is
    // most of a head's cost (an index descent comparing text keys), and with several relays each
    // claim's scan passes the heads the others hold while they publish, as many as it takes. The
    // check takes nothing (see Sql#aggregateLockFree); PostgreSQL runs the cheaper condition first.
    return select
        .from(e)
        .where(e.PROCESSED_AT.isNull())
        .and(e.POSITION.ge(scanFrom))
        .and(isDue(e, parkedOnly))
        .and(
            Sql.aggregateLockFree(
                Sql.aggregateLockNamespace(schema), e.AGGREGATE_TYPE, e.AGGREGATE_ID))
        .and(noEarlierRow)
        .orderBy(e.POSITION)
        .limit(headsLimit)
        .forUpdate()
        .of(e)
        .skipLocked();
  }

  /**
   * The rows of one aggregate from a position on, in the aggregate index ({@code
   * outbox_events_pending_aggregate_idx}): {@code type = ?}, {@code id <= ?} and {@code (id,
   * position) >= (?, ?)}, with an {@code ORDER BY} on type, id and position, which only that index
   * gives, so PostgreSQL reads it from the key on whatever its statistics say. The bound on the id
   * ends the scan at the aggregate's last entry: without it a run shorter than the limit read on
   * into the next aggregates and stepped over the entries their published rows left, which a held
   * vacuum keeps (about 550 per head in a held window, against the 3 rows of the run). Asked as
   * {@code type = ? AND id = ?}, position order was enough, and once an analyse had counted next to
   * nothing pending (a relay that keeps up) PostgreSQL walked the position index from the start
   * filtering for the aggregate, as cheap by its count as one descent: at 7,000 writes a second one
   * claim then took 81 s, and the backlog it let build made the next ones slower, until the next
   * analyse. (A row-comparison upper bound, {@code (type, id) <= (...)}, does not stop a B-tree
   * scan while the type is the same everywhere: PostgreSQL checks it on every entry to the index's
   * end, 5 ms per head on 50,000 pending rows. A plain bound on the id does.)
   */
  static Condition inAggregateFrom(
      OutboxEvents r, Field<String> type, Field<String> id, Field<Long> position) {
    return r.AGGREGATE_TYPE
        .eq(type)
        .and(r.AGGREGATE_ID.le(id))
        .and(DSL.row(r.AGGREGATE_ID, r.POSITION).ge(DSL.row(id, position)));
  }

  /**
   * A row due now: not dead, not backing off, and parked by the WAL reader if {@code parkedOnly}.
   */
  static Condition isDue(OutboxEvents e, boolean parkedOnly) {
    Condition due =
        e.DEAD_AT
            .isNull()
            .and(e.RETRY_AFTER.isNull().or(e.RETRY_AFTER.le(currentOffsetDateTime())));
    return parkedOnly ? due.and(commitOrdered(e)) : due;
  }

  /**
   * A row the WAL reader parked with its place in commit order ({@code commit_lsn}, schema V12):
   * the drainer's. A row parked by hand has none until the reader reads it from the slot.
   */
  private static Condition commitOrdered(OutboxEvents e) {
    return e.PARKED.isTrue().and(e.COMMIT_LSN.isNotNull());
  }

  /**
   * The columns both claims return, in the order of {@link ClaimStatements#ID} to {@link
   * ClaimStatements#BODY_BYTES}. Payload and headers come only when stored uncompressed in at most
   * {@code inlineBytes} together: {@code pg_column_size} and {@code pg_column_compression} read the
   * stored value's header, not the value, so a small row costs two cheap calls per column. A larger
   * row comes with the bytes of its text instead, which PostgreSQL measures by printing it ({@code
   * octet_length(payload::text)}): the stored size of a compressed value can be a hundredth of its
   * text.
   */
  static List<SelectField<?>> columns(OutboxEvents e, boolean parkedOnly, int inlineBytes) {
    Condition inline =
        columnSize(e.PAYLOAD)
            .plus(columnSize(e.HEADERS))
            .le(DSL.inline(inlineBytes))
            .and(compression(e.PAYLOAD).isNull())
            .and(compression(e.HEADERS).isNull());
    Field<Long> textBytes = textBytes(e.PAYLOAD).plus(textBytes(e.HEADERS));
    return List.of(
        e.ID,
        e.POSITION,
        e.AGGREGATE_TYPE,
        e.AGGREGATE_ID,
        e.EVENT_TYPE,
        DSL.when(inline, e.PAYLOAD).as(e.PAYLOAD.getUnqualifiedName()),
        DSL.when(inline, e.HEADERS).as(e.HEADERS.getUnqualifiedName()),
        e.ATTEMPTS,
        e.CREATED_AT,
        field(isDue(e, parkedOnly)).as("due"),
        DSL.when(inline, DSL.inline(null, SQLDataType.BIGINT))
            .otherwise(textBytes)
            .as("body_bytes"));
  }

  /** {@code pg_column_size(column)}: the bytes the value takes as stored (compressed or not). */
  private static Field<Integer> columnSize(Field<?> column) {
    return DSL.function(name("pg_catalog", "pg_column_size"), SQLDataType.INTEGER, column);
  }

  /** {@code pg_column_compression(column)}: null unless the value is stored compressed. */
  private static Field<String> compression(Field<?> column) {
    return DSL.function(name("pg_catalog", "pg_column_compression"), SQLDataType.VARCHAR, column);
  }

  /** The bytes of the value's text in the server's encoding, as a {@code bigint}. */
  private static Field<Long> textBytes(Field<?> column) {
    return DSL.function(
            name("pg_catalog", "octet_length"), SQLDataType.INTEGER, column.cast(SQLDataType.CLOB))
        .cast(SQLDataType.BIGINT);
  }
}

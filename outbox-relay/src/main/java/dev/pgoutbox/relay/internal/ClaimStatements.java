package dev.pgoutbox.relay.internal;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static org.jooq.impl.DSL.lateral;
import static org.jooq.impl.DSL.name;
import static org.jooq.impl.DSL.param;
import static org.jooq.impl.DSL.partitionBy;
import static org.jooq.impl.DSL.rowNumber;
import static org.jooq.impl.DSL.select;

import dev.pgoutbox.db.jooq.tables.OutboxEvents;
import java.util.ArrayList;
import java.util.List;
import org.jooq.CommonTableExpression;
import org.jooq.Condition;
import org.jooq.Field;
import org.jooq.Param;
import org.jooq.Query;
import org.jooq.Record;
import org.jooq.Record3;
import org.jooq.Record4;
import org.jooq.SelectField;
import org.jooq.SelectSelectStep;
import org.jooq.Table;
import org.jooq.impl.DSL;

/**
 * The claim statements of one outbox schema, built from the generated tables and rendered once (see
 * {@link RenderedStatement}); {@link Claimer} binds and runs them. What each step does and why is
 * told at {@link Claimer}.
 *
 * <p>Both return the columns of {@link ClaimParts#columns}, read by index ({@link #ID} to {@link
 * #DUE}); the strict claim adds {@link #RN}.
 */
final class ClaimStatements {

  /** Strict claim, bind 1: the position the heads search starts from. */
  static final int STRICT_SCAN_FROM = 1;

  /** Strict claim, bind 2: most heads to lock. */
  static final int STRICT_HEADS = 2;

  /** Strict claim, bind 3: the first key of the aggregate locks ({@link Sql#tryLockAggregate}). */
  static final int STRICT_LOCK_NAMESPACE = 3;

  /** Strict claim, bind 4: most rows read behind each owned head. */
  static final int STRICT_PER_AGGREGATE = 4;

  /** Strict claim, bind 5: most rows claimed. */
  static final int STRICT_BATCH_SIZE = 5;

  /** Unordered claim, bind 1: the position the scan starts from. */
  static final int UNORDERED_SCAN_FROM = 1;

  /** Unordered claim, bind 2: most rows claimed. */
  static final int UNORDERED_BATCH_SIZE = 2;

  /** Bodies statement ({@link #bodies}), bind 1: the ids, a {@code uuid[]}. */
  static final int BODIES_IDS = 1;

  static final int ID = 1;
  static final int POSITION = 2;
  static final int AGGREGATE_TYPE = 3;
  static final int AGGREGATE_ID = 4;
  static final int EVENT_TYPE = 5;
  static final int PAYLOAD = 6;
  static final int HEADERS = 7;
  static final int ATTEMPTS = 8;
  static final int CREATED_AT = 9;
  static final int DUE = 10;

  /**
   * Null for a row whose payload and headers came with the claim; for a row stored larger than the
   * claim's inline size ({@link #DEFAULT_INLINE_BYTES}), whose payload and headers columns are
   * null, the bytes of their JSON text, measured by PostgreSQL: {@link Claimer} reads such rows
   * after the claim, only as many as the batch's byte budget takes.
   */
  static final int BODY_BYTES = 11;

  /** Strict claim only: the row's place in its aggregate's run, 1 for the head. */
  static final int RN = 12;

  /**
   * Strict claim only: how many heads the search locked, owned or not (the same on every row). It
   * fell short of the heads asked for only when it read every pending row to the end; heads whose
   * aggregate another relay took meanwhile are locked but not returned.
   */
  static final int HEADS_SEARCHED = 13;

  /**
   * The inline size of the statements rendered without one: the default byte budget over the
   * default batch size, so that a default batch of rows that came inline stays within its budget.
   */
  static final int DEFAULT_INLINE_BYTES = 16 * 1_048_576 / 200;

  private ClaimStatements() {}

  /**
   * The stored size of a row's payload and headers at which they no longer come with the claim, for
   * a budget of {@code maxBatchBytes} over {@code batchSize} rows: a full batch of rows that came
   * inline is then within the budget (counted as stored; escapes can make the text longer).
   */
  static int inlineBytes(int batchSize, int maxBatchBytes) {
    return Math.max(1, maxBatchBytes / batchSize);
  }

  /**
   * The strict claim. {@code releaseDeadAggregates} ({@code RELEASE_AGGREGATE}) makes a dead row
   * stop holding back its aggregate's later rows.
   */
  static RenderedStatement strict(String schema, boolean releaseDeadAggregates) {
    return strict(schema, releaseDeadAggregates, false);
  }

  /** {@link #strict(String, boolean, boolean, int)} at {@link #DEFAULT_INLINE_BYTES}. */
  static RenderedStatement strict(
      String schema, boolean releaseDeadAggregates, boolean parkedOnly) {
    return strict(schema, releaseDeadAggregates, parkedOnly, DEFAULT_INLINE_BYTES);
  }

  /**
   * The strict claim; {@code parkedOnly} (the drainer of a WAL relay) makes a row due only when the
   * WAL reader parked it, so the claim never takes a row the reader publishes. Rows stored larger
   * than {@code inlineBytes} come without their payload and headers ({@link #BODY_BYTES}).
   */
  static RenderedStatement strict(
      String schema, boolean releaseDeadAggregates, boolean parkedOnly, int inlineBytes) {
    Param<Long> scanFrom = param("scanFrom", Long.class);
    Param<Integer> headsLimit = param("heads", Integer.class);
    Param<Integer> lockNamespace = param("lockNamespace", Integer.class);
    Param<Integer> perAggregate = param("perAggregate", Integer.class);
    Param<Integer> batchSize = param("batchSize", Integer.class);

    OutboxEvents e = OUTBOX_EVENTS.as("e");
    // A parked-only claim carries each head's place in commit order ("l", see commitOrder) to read
    // its run from there.
    List<SelectField<?>> headFields =
        new ArrayList<>(List.of(e.AGGREGATE_TYPE, e.AGGREGATE_ID, e.POSITION));
    List<String> headNames = new ArrayList<>(List.of("t", "a", "p"));
    if (parkedOnly) {
      headFields.add(e.COMMIT_LSN);
      headNames.add("l");
    }
    String[] names = headNames.toArray(String[]::new);
    CommonTableExpression<Record> heads =
        name("heads")
            .fields(names)
            .asMaterialized(
                ClaimParts.headsSearch(
                    select(headFields),
                    e,
                    schema,
                    scanFrom,
                    headsLimit,
                    releaseDeadAggregates,
                    parkedOnly));
    Field<String> t = heads.field("t", String.class);
    Field<String> a = heads.field("a", String.class);
    Field<Long> p = heads.field("p", Long.class);
    SelectSelectStep<? extends Record> ownedSelect =
        parkedOnly ? select(t, a, p, heads.field("l", Long.class)) : select(t, a, p);
    CommonTableExpression<?> owned =
        name("owned")
            .fields(names)
            .asMaterialized(
                ownedSelect
                    .from(heads)
                    .where(
                        Sql.tryLockAggregate(
                            lockNamespace,
                            heads.field("t", String.class),
                            heads.field("a", String.class))));
    Field<String> headType = owned.field("t", String.class);
    Field<String> headId = owned.field("a", String.class);
    Field<Long> headPosition = owned.field("p", Long.class);

    OutboxEvents r = OUTBOX_EVENTS.as("r");
    Table<?> run;
    Field<Long> runPosition;
    List<org.jooq.OrderField<?>> runOrder;
    if (parkedOnly) {
      // The parked rows from the head on in commit order, through outbox_events_parked_order_idx.
      Condition inRun =
          r.PROCESSED_AT
              .isNull()
              .and(r.PARKED.isTrue())
              .and(r.AGGREGATE_TYPE.eq(headType))
              .and(r.AGGREGATE_ID.eq(headId))
              .and(
                  DSL.row(r.COMMIT_LSN, r.POSITION)
                      .ge(DSL.row(owned.field("l", Long.class), headPosition)));
      if (releaseDeadAggregates) {
        inRun = inRun.and(r.DEAD_AT.isNull());
      }
      Table<Record4<String, String, Long, Long>> parkedRun =
          lateral(
                  select(r.AGGREGATE_TYPE, r.AGGREGATE_ID, r.POSITION, r.COMMIT_LSN)
                      .from(r)
                      .where(inRun)
                      .orderBy(r.AGGREGATE_TYPE, r.AGGREGATE_ID, r.COMMIT_LSN, r.POSITION)
                      .limit(perAggregate))
              .as("x");
      runPosition = parkedRun.field(r.POSITION);
      runOrder = List.of(parkedRun.field(r.COMMIT_LSN), runPosition);
      run = parkedRun;
    } else {
      Condition inRun =
          r.PROCESSED_AT
              .isNull()
              .and(ClaimParts.inAggregateFrom(r, headType, headId, headPosition));
      if (releaseDeadAggregates) {
        inRun = inRun.and(r.DEAD_AT.isNull());
      }
      // The rows from the head on in the aggregate index's order, and no further than the
      // aggregate's end (see ClaimParts#inAggregateFrom).
      Table<Record3<String, String, Long>> positionRun =
          lateral(
                  select(r.AGGREGATE_TYPE, r.AGGREGATE_ID, r.POSITION)
                      .from(r)
                      .where(inRun)
                      .orderBy(r.AGGREGATE_TYPE, r.AGGREGATE_ID, r.POSITION)
                      .limit(perAggregate))
              .as("x");
      runPosition = positionRun.field(r.POSITION);
      runOrder = List.of(runPosition);
      run = positionRun;
    }
    CommonTableExpression<Record4<String, String, Long, Integer>> chosen =
        name("chosen")
            .fields("t", "a", "p", "rn")
            .asMaterialized(
                select(
                        headType,
                        headId,
                        runPosition,
                        rowNumber().over(partitionBy(headType, headId).orderBy(runOrder)).as("rn"))
                    .from(owned)
                    .crossJoin(run)
                    .where(run.field(r.AGGREGATE_TYPE).eq(headType))
                    .and(run.field(r.AGGREGATE_ID).eq(headId))
                    .orderBy(DSL.field(name("rn")), headPosition)
                    .limit(batchSize));
    // Each chosen row looked up and locked on its own: as a join, PostgreSQL could pair every
    // chosen row with a walk of the whole pending index, as cheap as a lookup by its statistics
    // once they counted next to nothing pending.
    OutboxEvents c = OUTBOX_EVENTS.as("c");
    Table<Record> claimed =
        lateral(
                select(ClaimParts.columns(c, parkedOnly, inlineBytes))
                    .from(c)
                    .where(c.POSITION.eq(chosen.field("p", Long.class)))
                    .and(c.AGGREGATE_TYPE.eq(chosen.field("t", String.class)))
                    .and(c.AGGREGATE_ID.eq(chosen.field("a", String.class)))
                    .and(c.PROCESSED_AT.isNull())
                    .forUpdate())
            .as("k");
    List<SelectField<?>> selected = new ArrayList<>(List.of(claimed.fields()));
    selected.add(chosen.field("rn", Integer.class));
    selected.add(ClaimParts.headsSearched(heads));
    Query claim =
        DSL.with(heads).with(owned).with(chosen).select(selected).from(chosen).crossJoin(claimed);
    return RenderedStatement.render(
        schema, claim, "scanFrom", "heads", "lockNamespace", "perAggregate", "batchSize");
  }

  /**
   * The strict claim when every row of the batch is a head (as many aggregates pending as the batch
   * holds): the {@code heads} and {@code owned} steps of {@link #strict} alone, returning the owned
   * heads' columns with {@code rn} 1. Each head is locked by the search ({@code FOR UPDATE SKIP
   * LOCKED}, which re-reads its latest version), so no run is read behind it, nothing is numbered
   * or sorted, and no row is locked twice. Binds 1 to 3 as {@link #strict}'s.
   */
  static RenderedStatement strictHeadsOnly(String schema, boolean releaseDeadAggregates) {
    return strictHeadsOnly(schema, releaseDeadAggregates, false);
  }

  /** {@link #strictHeadsOnly(String, boolean, boolean, int)} at {@link #DEFAULT_INLINE_BYTES}. */
  static RenderedStatement strictHeadsOnly(
      String schema, boolean releaseDeadAggregates, boolean parkedOnly) {
    return strictHeadsOnly(schema, releaseDeadAggregates, parkedOnly, DEFAULT_INLINE_BYTES);
  }

  /**
   * {@link #strictHeadsOnly(String, boolean)}, parked rows only and large rows left out as in
   * {@link #strict}.
   */
  static RenderedStatement strictHeadsOnly(
      String schema, boolean releaseDeadAggregates, boolean parkedOnly, int inlineBytes) {
    Param<Long> scanFrom = param("scanFrom", Long.class);
    Param<Integer> headsLimit = param("heads", Integer.class);
    Param<Integer> lockNamespace = param("lockNamespace", Integer.class);
    OutboxEvents e = OUTBOX_EVENTS.as("e");
    CommonTableExpression<Record> heads =
        name("heads")
            .asMaterialized(
                ClaimParts.headsSearch(
                    select(ClaimParts.columns(e, parkedOnly, inlineBytes)),
                    e,
                    schema,
                    scanFrom,
                    headsLimit,
                    releaseDeadAggregates,
                    parkedOnly));
    List<SelectField<?>> selected = new ArrayList<>(List.of(heads.fields()));
    selected.add(DSL.inline(1).as("rn"));
    selected.add(ClaimParts.headsSearched(heads));
    Query claim =
        DSL.with(heads)
            .select(selected)
            .from(heads)
            .where(
                Sql.tryLockAggregate(
                    lockNamespace,
                    heads.field(e.AGGREGATE_TYPE.getUnqualifiedName(), String.class),
                    heads.field(e.AGGREGATE_ID.getUnqualifiedName(), String.class)));
    return RenderedStatement.render(schema, claim, "scanFrom", "heads", "lockNamespace");
  }

  /** {@link #unordered(String, int)} at {@link #DEFAULT_INLINE_BYTES}. */
  static RenderedStatement unordered(String schema) {
    return unordered(schema, DEFAULT_INLINE_BYTES);
  }

  /**
   * The unordered claim: due rows oldest first, each locked on its own; large rows left out as in
   * {@link #strict}.
   */
  static RenderedStatement unordered(String schema, int inlineBytes) {
    Param<Long> scanFrom = param("scanFrom", Long.class);
    Param<Integer> batchSize = param("batchSize", Integer.class);
    OutboxEvents e = OUTBOX_EVENTS.as("e");
    Query claim =
        select(ClaimParts.columns(e, false, inlineBytes))
            .from(e)
            .where(e.PROCESSED_AT.isNull())
            .and(e.POSITION.ge(scanFrom))
            .and(ClaimParts.isDue(e, false))
            .orderBy(e.POSITION)
            .limit(batchSize)
            .forUpdate()
            .of(e)
            .skipLocked();
    return RenderedStatement.render(schema, claim, "scanFrom", "batchSize");
  }

  /**
   * Reads the payload and headers of rows the claim left out ({@link #BODY_BYTES}), by id; the
   * claim's transaction holds them locked. Bind {@link #BODIES_IDS}: the ids. Returns id, payload,
   * headers.
   */
  static RenderedStatement bodies(String schema) {
    OutboxEvents e = OUTBOX_EVENTS.as("e");
    Param<java.util.UUID[]> ids = param("ids", java.util.UUID[].class);
    Query query = select(e.ID, e.PAYLOAD, e.HEADERS).from(e).where(e.ID.eq(DSL.any(ids)));
    return RenderedStatement.render(schema, query, "ids");
  }
}

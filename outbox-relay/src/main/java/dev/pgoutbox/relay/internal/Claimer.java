package dev.pgoutbox.relay.internal;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static org.jooq.impl.DSL.currentOffsetDateTime;
import static org.jooq.impl.DSL.field;
import static org.jooq.impl.DSL.lateral;
import static org.jooq.impl.DSL.name;
import static org.jooq.impl.DSL.partitionBy;
import static org.jooq.impl.DSL.rowNumber;
import static org.jooq.impl.DSL.select;
import static org.jooq.impl.DSL.selectOne;

import dev.pgoutbox.db.jooq.tables.OutboxEvents;
import dev.pgoutbox.relay.DeadLetterPolicy;
import dev.pgoutbox.relay.Ordering;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.UUID;
import org.jooq.CommonTableExpression;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.Record;
import org.jooq.Record1;
import org.jooq.Record3;
import org.jooq.Record4;
import org.jooq.SelectField;
import org.jooq.Table;
import org.jooq.impl.DSL;

/**
 * Claims due events inside the caller's transaction, through the generated jOOQ tables.
 *
 * <p>Strict ordering: lock the head (oldest unprocessed row) of each eligible aggregate with {@code
 * FOR UPDATE SKIP LOCKED}, scanning pending rows in {@code position} order so the oldest work goes
 * first; the holder of a head alone takes the due run behind it. Two relays therefore never share
 * an aggregate, and an aggregate whose head is not due (backing off, or dead under {@link
 * DeadLetterPolicy#HOLD_AGGREGATE}) is skipped whole.
 *
 * <p>Unordered: lock due rows oldest first with {@code SKIP LOCKED}, independently.
 *
 * <p>Not thread-safe: one per relay loop (it adapts how many heads it asks for).
 */
public final class Claimer {

  private static final Comparator<ClaimedRow.AggregateKey> AGGREGATE_ORDER =
      Comparator.comparing(ClaimedRow.AggregateKey::id)
          .thenComparing(ClaimedRow.AggregateKey::type);

  private static final Comparator<ClaimedRow> PUBLISH_ORDER =
      Comparator.comparing(ClaimedRow::aggregateId)
          .thenComparing(ClaimedRow::aggregateType)
          .thenComparingLong(ClaimedRow::position);

  /**
   * Most aggregates one strict claim takes. Each holds an entry of PostgreSQL's shared lock table
   * (sized {@code max_locks_per_transaction x max_connections}) until the batch commits, so a batch
   * of 10,000 single-event aggregates must not take 10,000 of them.
   */
  static final int MAX_HEADS = 1_000;

  /** How often a claim scans from the very first pending row instead of the low-water mark. */
  private static final long FULL_SCAN_EVERY_NANOS = 1_000_000_000L;

  private final int batchSize;
  private final Ordering ordering;
  private final boolean releaseDeadAggregates;
  private final int lockNamespace;
  private int headsToClaim;

  /**
   * Below this position, the last scan found nothing this relay could take. Published rows leave
   * dead entries at the front of the pending index until vacuum removes them; starting the scan
   * here skips them. Rows below it can become claimable again (a backoff ends, another relay lets
   * go, a late commit), so a full scan runs at least every second and after every short claim.
   */
  private long lowWater;

  private long nextFullScanNanos = System.nanoTime();
  private boolean lastClaimShort = true;
  private int lastHeadsFound = Integer.MAX_VALUE;

  /**
   * A claimer for batches of at most {@code batchSize} events of the outbox in {@code schema}
   * (which names the relays' aggregate locks: outboxes in other schemas do not contend).
   */
  public Claimer(
      int batchSize, Ordering ordering, DeadLetterPolicy deadLetterPolicy, String schema) {
    this.batchSize = batchSize;
    this.lockNamespace = Sql.aggregateLockNamespace(schema);
    this.ordering = ordering;
    this.releaseDeadAggregates = deadLetterPolicy == DeadLetterPolicy.RELEASE_AGGREGATE;
    this.headsToClaim = Math.min(batchSize, 32);
  }

  /** A claimer for the outbox in the default schema ({@code public}). */
  public Claimer(int batchSize, Ordering ordering, DeadLetterPolicy deadLetterPolicy) {
    this(batchSize, ordering, deadLetterPolicy, "public");
  }

  /**
   * Claims up to {@code batchSize} due events, locked until the caller's transaction ends, in
   * publishing order: by {@code aggregate_id}, then within an aggregate by {@code position}.
   */
  public List<ClaimedRow> claim(DSLContext tx) {
    List<ClaimedRow> rows = ordering == Ordering.STRICT ? claimStrict(tx) : claimUnordered(tx);
    rows.sort(PUBLISH_ORDER);
    return rows;
  }

  private List<ClaimedRow> claimUnordered(DSLContext tx) {
    OutboxEvents e = OUTBOX_EVENTS.as("e");
    List<ClaimedRow> rows =
        tx.select(columns(e))
            .from(e)
            .where(e.PROCESSED_AT.isNull())
            .and(e.POSITION.ge(scanFrom()))
            .and(isDue(e))
            .orderBy(e.POSITION)
            .limit(batchSize)
            .forUpdate()
            .of(e)
            .skipLocked()
            .fetch(Claimer::toRow);
    afterScan(rows.isEmpty() ? null : rows.get(0).position(), rows.size() < batchSize);
    return rows;
  }

  /** The position this claim's scan starts from: 0 for a full scan, else the low-water mark. */
  private long scanFrom() {
    long now = System.nanoTime();
    if (lastClaimShort || now - nextFullScanNanos >= 0) {
      nextFullScanNanos = now + FULL_SCAN_EVERY_NANOS;
      return 0;
    }
    return lowWater;
  }

  private void afterScan(Long firstFound, boolean shortClaim) {
    lastClaimShort = shortClaim;
    if (firstFound != null) {
      lowWater = firstFound;
    }
  }

  /**
   * One statement in four steps, each row locked before it is handed out:
   *
   * <ol>
   *   <li>{@code heads}: lock the head (oldest pending row) of eligible aggregates, oldest first,
   *       {@code FOR UPDATE SKIP LOCKED};
   *   <li>{@code owned}: keep the heads whose aggregate lock this transaction gets ({@link
   *       Sql#tryLockAggregate}, a transaction-level advisory lock). Every relay takes it before it
   *       reads an aggregate's run, so a head that became eligible behind a relay's back (a late
   *       commit, an admin retry under {@link DeadLetterPolicy#RELEASE_AGGREGATE}) cannot let a
   *       second relay in while the first still publishes;
   *   <li>{@code chosen}: a lateral join reads the run behind each owned head, dealt out in rounds
   *       (the first event of every head, then the second, ...) until the batch is full;
   *   <li>the chosen rows are locked ({@code FOR UPDATE}) and read, and only they: locking re-reads
   *       each row's latest version, so a row another relay published before this one got the
   *       aggregate is not handed out again, and a row that stopped being due comes back with
   *       {@code due = false} and ends its run. No other relay locks rows of an owned aggregate, so
   *       the lock waits only for an admin statement, or for a relay that locked a late head and
   *       then failed to get its aggregate (it keeps that row lock until it commits); {@code
   *       lock_timeout} bounds the wait, and PostgreSQL breaks the rare deadlock by failing one
   *       batch, which is retried.
   * </ol>
   *
   * <p>Each owned head holds one advisory lock until commit: at most {@link #MAX_HEADS} entries of
   * PostgreSQL's lock table per relay.
   *
   * <p>Every aggregate this relay locked moves forward in this batch, and a hot aggregate cannot
   * crowd the others out.
   */
  private List<ClaimedRow> claimStrict(DSLContext tx) {
    OutboxEvents e = OUTBOX_EVENTS.as("e");
    OutboxEvents earlier = OUTBOX_EVENTS.as("p");
    Condition earlierPending =
        earlier
            .PROCESSED_AT
            .isNull()
            .and(earlier.AGGREGATE_TYPE.eq(e.AGGREGATE_TYPE))
            .and(earlier.AGGREGATE_ID.eq(e.AGGREGATE_ID))
            .and(earlier.POSITION.lt(e.POSITION));
    if (releaseDeadAggregates) {
      earlierPending = earlierPending.and(earlier.DEAD_AT.isNull());
    }
    int limit = headsToClaim;
    CommonTableExpression<Record3<String, String, Long>> heads =
        name("heads")
            .fields("t", "a", "p")
            .asMaterialized(
                select(e.AGGREGATE_TYPE, e.AGGREGATE_ID, e.POSITION)
                    .from(e)
                    .where(e.PROCESSED_AT.isNull())
                    .and(e.POSITION.ge(scanFrom()))
                    .and(isDue(e))
                    .andNotExists(selectOne().from(earlier).where(earlierPending))
                    .orderBy(e.POSITION)
                    .limit(limit)
                    .forUpdate()
                    .of(e)
                    .skipLocked());
    CommonTableExpression<Record3<String, String, Long>> owned =
        name("owned")
            .fields("t", "a", "p")
            .asMaterialized(
                select(
                        heads.field("t", String.class),
                        heads.field("a", String.class),
                        heads.field("p", Long.class))
                    .from(heads)
                    .where(
                        Sql.tryLockAggregate(
                            lockNamespace,
                            heads.field("t", String.class),
                            heads.field("a", String.class))));
    Field<String> headType = owned.field("t", String.class);
    Field<String> headId = owned.field("a", String.class);
    Field<Long> headPosition = owned.field("p", Long.class);

    // Enough per aggregate to fill the batch when runs are uneven, without reading whole runs.
    // Sized by the heads the last claim found: fewer than asked for when few aggregates are
    // pending.
    int expectedHeads = Math.max(1, Math.min(limit, lastHeadsFound));
    int perAggregate =
        Math.min(batchSize, Math.max(2, 2 * ((batchSize + expectedHeads - 1) / expectedHeads)));
    OutboxEvents r = OUTBOX_EVENTS.as("r");
    Condition inRun =
        r.AGGREGATE_TYPE
            .eq(headType)
            .and(r.AGGREGATE_ID.eq(headId))
            .and(r.PROCESSED_AT.isNull())
            .and(r.POSITION.ge(headPosition));
    if (releaseDeadAggregates) {
      inRun = inRun.and(r.DEAD_AT.isNull());
    }
    Table<Record1<Long>> run =
        lateral(select(r.POSITION).from(r).where(inRun).orderBy(r.POSITION).limit(perAggregate))
            .as("x");
    Field<Long> runPosition = run.field(r.POSITION);
    CommonTableExpression<Record4<String, String, Long, Integer>> chosen =
        name("chosen")
            .fields("t", "a", "p", "rn")
            .asMaterialized(
                select(
                        headType,
                        headId,
                        runPosition,
                        rowNumber()
                            .over(partitionBy(headType, headId).orderBy(runPosition))
                            .as("rn"))
                    .from(owned)
                    .crossJoin(run)
                    .orderBy(DSL.field(name("rn")), headPosition)
                    .limit(batchSize));
    OutboxEvents c = OUTBOX_EVENTS.as("c");
    Field<Integer> rn = chosen.field("rn", Integer.class);
    List<SelectField<?>> selected = new ArrayList<>(columns(c));
    selected.add(rn);
    List<Record> records =
        tx.with(heads)
            .with(owned)
            .with(chosen)
            .select(selected)
            .from(chosen)
            .join(c)
            .on(c.AGGREGATE_TYPE.eq(chosen.field("t", String.class)))
            .and(c.AGGREGATE_ID.eq(chosen.field("a", String.class)))
            .and(c.POSITION.eq(chosen.field("p", Long.class)))
            .where(c.PROCESSED_AT.isNull())
            .forUpdate()
            .of(c)
            .fetch();

    List<ClaimedRow> fetched = new ArrayList<>(records.size());
    int headsFound = 0;
    Long firstHead = null;
    for (Record record : records) {
      ClaimedRow row = toRow(record);
      fetched.add(row);
      if (record.get(rn) == 1) {
        headsFound++;
        firstHead = firstHead == null ? row.position() : Math.min(firstHead, row.position());
      }
    }
    afterScan(firstHead, headsFound < limit);
    lastHeadsFound = headsFound == 0 ? limit : headsFound;
    fetched.sort(
        Comparator.comparing(ClaimedRow::aggregate, AGGREGATE_ORDER)
            .thenComparingLong(ClaimedRow::position));
    List<ClaimedRow> rows = cutAtFirstRowNotDue(fetched);
    adaptHeadsToClaim(headsFound, limit, rows);
    return rows;
  }

  /** A run ends before its first row that is not due (left by a mode switch or an admin action). */
  private static List<ClaimedRow> cutAtFirstRowNotDue(List<ClaimedRow> fetched) {
    List<ClaimedRow> rows = new ArrayList<>(fetched.size());
    ClaimedRow blocked = null;
    for (ClaimedRow row : fetched) {
      if (blocked != null && blocked.sameAggregate(row)) {
        continue;
      }
      if (!row.due()) {
        blocked = row;
        continue;
      }
      rows.add(row);
    }
    return rows;
  }

  /**
   * Asks for about as many heads as filled the last full batch: locking heads that do not fit costs
   * a tuple write each, and asking for too few leaves the batch short.
   */
  private void adaptHeadsToClaim(int headsFound, int limit, List<ClaimedRow> rows) {
    long headsUsed = rows.stream().map(ClaimedRow::aggregate).distinct().count();
    if (rows.size() >= batchSize) {
      headsToClaim =
          (int) Math.min(maxHeads(), Math.max(2, headsUsed + Math.max(2, headsUsed / 4)));
    } else if (headsFound == limit) {
      headsToClaim = Math.min(maxHeads(), limit * 2);
    }
  }

  /** Most heads one claim asks for: each owned head holds an advisory lock until commit. */
  private int maxHeads() {
    return Math.min(batchSize, MAX_HEADS);
  }

  private static Condition isDue(OutboxEvents e) {
    return e.DEAD_AT
        .isNull()
        .and(e.RETRY_AFTER.isNull().or(e.RETRY_AFTER.le(currentOffsetDateTime())));
  }

  private static List<SelectField<?>> columns(OutboxEvents e) {
    return List.of(
        e.ID,
        e.POSITION,
        e.AGGREGATE_TYPE,
        e.AGGREGATE_ID,
        e.EVENT_TYPE,
        e.PAYLOAD,
        e.HEADERS,
        e.ATTEMPTS,
        e.CREATED_AT,
        field(isDue(e)).as("due"));
  }

  private static ClaimedRow toRow(Record record) {
    JSONB payload = record.get(5, JSONB.class);
    JSONB headers = record.get(6, JSONB.class);
    return new ClaimedRow(
        record.get(0, UUID.class),
        record.get(1, Long.class),
        record.get(2, String.class),
        record.get(3, String.class),
        record.get(4, String.class),
        payload == null ? "null" : payload.data(),
        headers == null ? null : headers.data(),
        record.get(7, Integer.class),
        record.get(8, OffsetDateTime.class),
        Boolean.TRUE.equals(record.get(9, Boolean.class)));
  }
}

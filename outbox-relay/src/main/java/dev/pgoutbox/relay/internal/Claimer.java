package dev.pgoutbox.relay.internal;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static org.jooq.impl.DSL.currentOffsetDateTime;
import static org.jooq.impl.DSL.field;
import static org.jooq.impl.DSL.lateral;
import static org.jooq.impl.DSL.orderBy;
import static org.jooq.impl.DSL.row;
import static org.jooq.impl.DSL.rowNumber;
import static org.jooq.impl.DSL.selectOne;
import static org.jooq.impl.DSL.values;

import dev.pgoutbox.db.jooq.tables.OutboxEvents;
import dev.pgoutbox.relay.DeadLetterPolicy;
import dev.pgoutbox.relay.Ordering;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.UUID;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.Record;
import org.jooq.Record3;
import org.jooq.Row3;
import org.jooq.SelectField;
import org.jooq.Table;

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

  /** How often a claim scans from the very first pending row instead of the low-water mark. */
  private static final long FULL_SCAN_EVERY_NANOS = 1_000_000_000L;

  private final int batchSize;
  private final Ordering ordering;
  private final boolean releaseDeadAggregates;
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

  /** A claimer for batches of at most {@code batchSize} events. */
  public Claimer(int batchSize, Ordering ordering, DeadLetterPolicy deadLetterPolicy) {
    this.batchSize = batchSize;
    this.ordering = ordering;
    this.releaseDeadAggregates = deadLetterPolicy == DeadLetterPolicy.RELEASE_AGGREGATE;
    this.headsToClaim = Math.min(batchSize, 32);
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
    List<Record3<String, String, Long>> heads =
        tx.select(e.AGGREGATE_TYPE, e.AGGREGATE_ID, e.POSITION)
            .from(e)
            .where(e.PROCESSED_AT.isNull())
            .and(e.POSITION.ge(scanFrom()))
            .and(isDue(e))
            .andNotExists(selectOne().from(earlier).where(earlierPending))
            .orderBy(e.POSITION)
            .limit(limit)
            .forUpdate()
            .of(e)
            .skipLocked()
            .fetch();
    afterScan(heads.isEmpty() ? null : heads.get(0).value3(), heads.size() < limit);
    if (heads.isEmpty()) {
      return new ArrayList<>();
    }

    List<ClaimedRow> rows = fetchRuns(tx, heads);
    adaptHeadsToClaim(heads.size(), limit, rows);
    return rows;
  }

  /**
   * Each head and the run behind it, dealt out in rounds: the first event of every head, then the
   * second of every head, and so on until the batch is full. Every aggregate this relay locked
   * moves forward in this batch (no head is locked in vain, keeping other relays out for nothing),
   * and a hot aggregate cannot crowd the others out.
   */
  private List<ClaimedRow> fetchRuns(DSLContext tx, List<Record3<String, String, Long>> heads) {
    // Enough per aggregate to fill the batch when runs are uneven, without reading whole runs.
    int perAggregate =
        Math.min(batchSize, Math.max(2, 2 * ((batchSize + heads.size() - 1) / heads.size())));
    List<Row3<String, String, Long>> headRows = new ArrayList<>(heads.size());
    for (Record3<String, String, Long> head : heads) {
      headRows.add(row(head.value1(), head.value2(), head.value3()));
    }
    @SuppressWarnings("unchecked")
    Row3<String, String, Long>[] rowArray = headRows.toArray(Row3[]::new);
    Table<Record3<String, String, Long>> h = values(rowArray).as("h", "t", "a", "p");
    Field<String> headType = h.field("t", String.class);
    Field<String> headId = h.field("a", String.class);
    Field<Long> headPosition = h.field("p", Long.class);

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
    List<SelectField<?>> runColumns = new ArrayList<>(columns(r));
    runColumns.add(rowNumber().over(orderBy(r.POSITION)).as("rn"));
    Table<Record> run =
        lateral(tx.select(runColumns).from(r).where(inRun).orderBy(r.POSITION).limit(perAggregate))
            .as("x");
    List<ClaimedRow> fetched =
        tx.select(run.fields())
            .from(h)
            .crossJoin(run)
            .orderBy(run.field("rn"), headPosition)
            .limit(batchSize)
            .fetch(Claimer::toRow);
    fetched.sort(
        Comparator.comparing(ClaimedRow::aggregate, AGGREGATE_ORDER)
            .thenComparingLong(ClaimedRow::position));
    return cutAtFirstRowNotDue(fetched);
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
      headsToClaim = (int) Math.min(batchSize, Math.max(2, headsUsed + Math.max(2, headsUsed / 4)));
    } else if (headsFound == limit) {
      headsToClaim = Math.min(batchSize, limit * 2);
    }
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

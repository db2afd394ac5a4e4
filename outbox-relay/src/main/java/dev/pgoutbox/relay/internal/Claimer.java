package dev.pgoutbox.relay.internal;

import dev.pgoutbox.relay.DeadLetterPolicy;
import dev.pgoutbox.relay.Ordering;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jspecify.annotations.Nullable;

/**
 * Claims due events inside the caller's transaction, with a statement built from the generated jOOQ
 * tables and rendered once ({@link ClaimStatements}), run through JDBC.
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
final class Claimer {

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
  static final long FULL_SCAN_EVERY_NANOS = 1_000_000_000L;

  /** How long a claim's first head must stand before the low-water mark rises to it. */
  static final long SETTLE_NANOS = 100_000_000L;

  /**
   * A full scan reads every pending row from position 0 when fewer aggregates are pending than it
   * asks for (a head is the oldest row of its aggregate, so the search cannot stop early): its cost
   * grows with the backlog. The next one waits at least this many times as long as the last one
   * took, so full scans take at most about 5% of the relay's time however long the backlog. Without
   * it, once a full scan took longer than {@link #FULL_SCAN_EVERY_NANOS} every claim was one, and a
   * relay that fell behind fell further behind.
   */
  static final long FULL_SCAN_COST_FACTOR = 20;

  /**
   * Claim time per head above which heads count as expensive. Finding a head costs a probe for an
   * earlier pending event of its aggregate, which steps over every index entry the aggregate's
   * published events left behind until vacuum removes them: a few microseconds normally, but
   * milliseconds while a long transaction holds vacuum back (measured: 267 entries per probe after
   * ten minutes at 2,000 events a second). A claim then asks for fewer heads and takes longer runs
   * behind each, so a batch costs a few probes instead of one per event.
   */
  static final long EXPENSIVE_HEAD_NANOS = 200_000L;

  /** Longest run per aggregate a claim aims for when heads are expensive. */
  static final int LONG_RUN = 16;

  /** The claimer's timing rules; tests shorten or disable them. */
  record Tuning(
      long settleNanos, long fullScanEveryNanos, long fullScanCostFactor, long expensiveHeadNanos) {

    static final Tuning DEFAULT =
        new Tuning(
            SETTLE_NANOS, FULL_SCAN_EVERY_NANOS, FULL_SCAN_COST_FACTOR, EXPENSIVE_HEAD_NANOS);

    Tuning settle(long nanos) {
      return new Tuning(nanos, fullScanEveryNanos, fullScanCostFactor, expensiveHeadNanos);
    }

    Tuning fullScanEvery(long nanos, long costFactor) {
      return new Tuning(settleNanos, nanos, costFactor, expensiveHeadNanos);
    }

    Tuning expensiveHead(long nanos) {
      return new Tuning(settleNanos, fullScanEveryNanos, fullScanCostFactor, nanos);
    }
  }

  private final int batchSize;
  private final long expensiveHeadNanos;
  private final Ordering ordering;
  private final boolean releaseDeadAggregates;
  private final int lockNamespace;

  private final String schema;

  /** The claim for this ordering and policy, rendered once (again on {@link #parkedOnly}). */
  private RenderedStatement statement;

  /**
   * Strict only: the claim used when a batch's worth of heads is asked for, so every row claimed is
   * a head ({@link ClaimStatements#strictHeadsOnly}); null when unordered.
   */
  private @Nullable RenderedStatement headsOnlyStatement;

  /** Keeps each claim within the byte budget, reading the bodies the claim left out. */
  private final ByteBudget budget;

  private final int inlineBytes;

  private int headsToClaim;

  /** Where claims scan from. */
  private final ScanWindow window;

  private int lastHeadsFound = Integer.MAX_VALUE;

  /** See {@link #mayHaveLeftEvents()}. */
  private boolean mayHaveLeftEvents;

  /** Whether the last strict claim spent more than {@link #EXPENSIVE_HEAD_NANOS} per head. */
  private boolean headsExpensive;

  /**
   * Heads the last search found when it ran out before its limit: all there were from the low-water
   * mark on. Asking for more makes the search read every pending row to the end.
   */
  private int headsAvailable = Integer.MAX_VALUE;

  /**
   * A claimer for batches of at most {@code batchSize} events of the outbox in {@code schema}
   * (which names the relays' aggregate locks: outboxes in other schemas do not contend).
   */
  Claimer(int batchSize, Ordering ordering, DeadLetterPolicy deadLetterPolicy, String schema) {
    this(batchSize, ordering, deadLetterPolicy, schema, Tuning.DEFAULT);
  }

  /**
   * A claimer for batches of at most {@code batchSize} events and {@code maxBatchBytes} bytes of
   * payloads and headers (see {@link dev.pgoutbox.relay.RelayConfig#maxBatchBytes()}).
   */
  Claimer(
      int batchSize,
      int maxBatchBytes,
      Ordering ordering,
      DeadLetterPolicy deadLetterPolicy,
      String schema) {
    this(batchSize, maxBatchBytes, ordering, deadLetterPolicy, schema, Tuning.DEFAULT);
  }

  /** A claimer with its own timing rules, for tests. */
  Claimer(
      int batchSize,
      Ordering ordering,
      DeadLetterPolicy deadLetterPolicy,
      String schema,
      Tuning tuning) {
    this(
        batchSize,
        dev.pgoutbox.relay.RelayConfig.DEFAULT_MAX_BATCH_BYTES,
        ordering,
        deadLetterPolicy,
        schema,
        tuning);
  }

  /** A claimer with a byte budget and its own timing rules. */
  Claimer(
      int batchSize,
      int maxBatchBytes,
      Ordering ordering,
      DeadLetterPolicy deadLetterPolicy,
      String schema,
      Tuning tuning) {
    this.batchSize = batchSize;
    this.inlineBytes = ClaimStatements.inlineBytes(batchSize, maxBatchBytes);
    this.budget = new ByteBudget(maxBatchBytes, schema);
    this.window = new ScanWindow(tuning);
    this.expensiveHeadNanos = tuning.expensiveHeadNanos();
    this.lockNamespace = Sql.aggregateLockNamespace(schema);
    this.schema = schema;
    this.ordering = ordering;
    this.releaseDeadAggregates = deadLetterPolicy == DeadLetterPolicy.RELEASE_AGGREGATE;
    this.headsToClaim = Math.min(batchSize, 32);
    this.statement =
        ordering == Ordering.STRICT
            ? ClaimStatements.strict(schema, releaseDeadAggregates, false, inlineBytes)
            : ClaimStatements.unordered(schema, inlineBytes);
    this.headsOnlyStatement =
        ordering == Ordering.STRICT
            ? ClaimStatements.strictHeadsOnly(schema, releaseDeadAggregates, false, inlineBytes)
            : null;
  }

  /**
   * Claims only rows a WAL reader parked ({@code true}), as the drainer of a WAL relay does, or
   * every pending row ({@code false}, the default; a WAL relay falls back to it when its slot is
   * lost). Strict ordering only.
   */
  void parkedOnly(boolean parkedOnly) {
    if (ordering != Ordering.STRICT) {
      throw new IllegalStateException("parked-only claims need strict ordering");
    }
    statement = ClaimStatements.strict(schema, releaseDeadAggregates, parkedOnly, inlineBytes);
    headsOnlyStatement =
        ClaimStatements.strictHeadsOnly(schema, releaseDeadAggregates, parkedOnly, inlineBytes);
    // Rows below the low-water mark may be due now: look from the start at the next claim.
    window.fullScanNext();
  }

  /** A claimer for the outbox in the default schema ({@code public}). */
  Claimer(int batchSize, Ordering ordering, DeadLetterPolicy deadLetterPolicy) {
    this(batchSize, ordering, deadLetterPolicy, "public");
  }

  /**
   * Claims up to {@code batchSize} due events, locked until the caller's transaction ends, in
   * publishing order: by {@code aggregate_id}, then within an aggregate by {@code position} (a
   * parked-only claim: by commit order, {@code commit_lsn} then {@code position}).
   *
   * <p>Only {@code tx}'s connection is used: the statement names the tables of the schema this
   * claimer was made for, whatever {@code tx}'s settings map them to.
   */
  List<ClaimedRow> claim(DSLContext tx) {
    List<ClaimedRow> rows = claimOnce(tx);
    if (rows.isEmpty() && window.mayLookFromStart()) {
      // Nothing from the low-water mark on, yet the relay was woken (or polled): a row below the
      // mark may have committed late, its writer held up between its insert and its commit for
      // longer than the settle time (a busy core, a slow trigger). Look from the start now, not at
      // the next full scan up to a second away. An empty claim is cheap: nothing is pending but
      // what other relays hold.
      window.fullScanNext();
      rows = claimOnce(tx);
    }
    if (ordering != Ordering.STRICT) {
      rows.sort(PUBLISH_ORDER);
    }
    return rows;
  }

  private List<ClaimedRow> claimOnce(DSLContext tx) {
    long started = System.nanoTime();
    List<ClaimedRow> rows = ordering == Ordering.STRICT ? claimStrict(tx) : claimUnordered(tx);
    window.claimEnded(started);
    return rows;
  }

  /**
   * Whether the last claim may have left events pending although its batch was not full. A strict
   * claim's bounds follow the last claims, not what is pending: the heads it asks for (one after a
   * quiet spell), the events it reads behind each head (fewer when the last claims found many
   * heads), none behind the heads when it asks for a batch's worth of them. When it used every head
   * it asked for, read a run to its bound, or read heads only, the relay claims again at once
   * rather than wait for a notification that will not come for those events.
   */
  boolean mayHaveLeftEvents() {
    return mayHaveLeftEvents;
  }

  private List<ClaimedRow> claimUnordered(DSLContext tx) {
    mayHaveLeftEvents = false;
    long from = window.scanFrom();
    List<SizedRow> fetched = new ArrayList<>(batchSize);
    ClaimReads.read(
        tx,
        statement,
        ps -> {
          ps.setLong(ClaimStatements.UNORDERED_SCAN_FROM, from);
          ps.setInt(ClaimStatements.UNORDERED_BATCH_SIZE, batchSize);
        },
        (row, rs) -> fetched.add(SizedRow.of(row, rs, 1)));
    window.afterScan(fetched.isEmpty() ? null : fetched.get(0).row().position());
    fetched.sort(Comparator.comparingLong(r -> r.row().position()));
    List<ClaimedRow> rows = budget.withinBudget(tx, fetched, false);
    mayHaveLeftEvents = rows.size() < fetched.size();
    return rows;
  }

  /**
   * A writer committed events from {@code position} on (its notification said so): the next claim
   * looks from there if the low-water mark has risen past it. This finds the late commit the settle
   * time did not wait for while claims keep finding newer rows, where an empty claim's look from
   * position 0 never runs.
   */
  void committedFrom(long position) {
    window.committedFrom(position);
  }

  /**
   * One statement in four steps, each row locked before it is handed out:
   *
   * <ol>
   *   <li>{@code heads}: lock the head (oldest pending row) of eligible aggregates, oldest first,
   *       {@code FOR UPDATE SKIP LOCKED}. A candidate whose aggregate lock another transaction
   *       holds (another relay publishing it) is passed before the probe for an earlier event, by a
   *       check that holds nothing ({@link Sql#aggregateLockFree}): with several relays, each claim
   *       passes the batches the others are publishing;
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
    long from = window.scanFrom();
    int limit = headsToClaim;
    if (window.fullScan()) {
      // Once a second, look a little further than the heads that exist (new aggregates, ones
      // behind a hot aggregate's backlog), reading the backlog once rather than every batch.
      limit = Math.min(maxHeads(), limit + Math.max(2, limit / 4));
    }
    // Enough per aggregate to fill the batch when runs are uneven, without reading whole runs.
    // Sized by the heads the last claim found: fewer than asked for when few aggregates are
    // pending.
    int expectedHeads = Math.max(1, Math.min(limit, lastHeadsFound));
    int perAggregate =
        Math.min(batchSize, Math.max(2, 2 * ((batchSize + expectedHeads - 1) / expectedHeads)));
    int headsLimit = limit;
    // A batch's worth of heads fills the batch with heads alone: one row per aggregate, so no run
    // is read behind the heads (the common case while many aggregates are pending).
    boolean headsOnly = headsLimit >= batchSize;

    List<SizedRow> fetched = new ArrayList<>(batchSize);
    long[] firstHead = {Long.MAX_VALUE};
    int[] headsCounted = {0};
    int[] headsSearched = {0};
    int[] longestRun = {0};
    long started = System.nanoTime();
    ClaimReads.read(
        tx,
        headsOnly ? Objects.requireNonNull(headsOnlyStatement) : statement,
        ps -> {
          ps.setLong(ClaimStatements.STRICT_SCAN_FROM, from);
          ps.setInt(ClaimStatements.STRICT_HEADS, headsLimit);
          ps.setInt(ClaimStatements.STRICT_LOCK_NAMESPACE, lockNamespace);
          if (!headsOnly) {
            ps.setInt(ClaimStatements.STRICT_PER_AGGREGATE, perAggregate);
            ps.setInt(ClaimStatements.STRICT_BATCH_SIZE, batchSize);
          }
        },
        (row, rs) -> {
          int placeInRun = rs.getInt(ClaimStatements.RN);
          fetched.add(SizedRow.of(row, rs, placeInRun));
          headsSearched[0] = rs.getInt(ClaimStatements.HEADS_SEARCHED);
          longestRun[0] = Math.max(longestRun[0], placeInRun);
          if (placeInRun == 1) {
            headsCounted[0]++;
            firstHead[0] = Math.min(firstHead[0], row.position());
          }
        });
    int headsFound = headsCounted[0];
    headsExpensive =
        headsFound > 0 && (System.nanoTime() - started) / headsFound > expensiveHeadNanos;
    window.afterScan(headsFound == 0 ? null : firstHead[0]);
    lastHeadsFound = headsFound == 0 ? limit : headsFound;
    // Within an aggregate, the claim's order: position, or commit order for a parked-only claim.
    Comparator<SizedRow> runOrder =
        Comparator.comparing((SizedRow r) -> r.row().aggregate(), AGGREGATE_ORDER)
            .thenComparingInt(SizedRow::placeInRun);
    fetched.sort(runOrder);
    List<SizedRow> due = SizedRow.cutAtFirstRowNotDue(fetched);
    // The byte budget deals rows out in the claim's rounds: every head, then every second row, ...
    due.sort(
        Comparator.comparingInt(SizedRow::placeInRun).thenComparingLong(r -> r.row().position()));
    List<ClaimedRow> rows = budget.withinBudget(tx, due, true);
    java.util.Map<UUID, Integer> placeInRun = new java.util.HashMap<>();
    for (SizedRow sized : due) {
      placeInRun.put(sized.row().id(), sized.placeInRun());
    }
    rows.sort(
        Comparator.comparing(ClaimedRow::aggregate, AGGREGATE_ORDER)
            .thenComparingInt(r -> placeInRun.get(r.id())));
    boolean cutForBytes = rows.size() < due.size();
    long headsUsed = rows.stream().map(ClaimedRow::aggregate).distinct().count();
    mayHaveLeftEvents =
        !rows.isEmpty()
            && (cutForBytes
                || headsOnly
                || headsUsed >= headsLimit
                || longestRun[0] >= perAggregate);
    // The heads the search locked, owned or not (0 when no row came back): heads lost to another
    // relay's aggregate lock count as found, since the search stopped at its limit.
    adaptHeadsToClaim(headsSearched[0], limit, rows, headsUsed, cutForBytes);
    return rows;
  }

  /**
   * Asks for about as many heads as filled the last full batch (a quarter more), or twice as many
   * when that batch used every head it asked for: locking heads that do not fit costs a tuple write
   * each, asking for too few leaves the batch short, and a batch of heads alone costs half as much
   * as one filled from runs behind a few heads.
   *
   * <p>Never more heads than the last search found when it found fewer than it asked for: that
   * search read every pending row from the low-water mark to the end (a head is the oldest row of
   * its aggregate, so the search cannot stop before it has seen them all), and the next one would
   * read them all again, once per batch, however long the backlog. Asking for at most what exists
   * lets the search stop at the last head. A short batch that found every head it asked for asks
   * for twice as many next time, so new aggregates are picked up within a few batches; a full scan
   * (once a second) asks for a few more, so an aggregate behind a hot one's backlog waits about a
   * second, not until that backlog drains.
   *
   * <p>When heads are expensive ({@link #EXPENSIVE_HEAD_NANOS}) a full batch asks for half as many
   * heads next time instead, down to runs of {@link #LONG_RUN}: the batch then fills from the runs
   * behind fewer heads, oldest heads still first.
   */
  private void adaptHeadsToClaim(
      int headsSearched, int limit, List<ClaimedRow> rows, long headsUsed, boolean cutForBytes) {
    if (headsSearched > 0 && headsSearched < limit) {
      headsAvailable = headsSearched;
    }
    long next = limit;
    if (cutForBytes) {
      // Full by bytes: as many heads as the budget took, a few more.
      headsToClaim =
          (int)
              Math.max(
                  1,
                  Math.min(
                      Math.min(maxHeads(), headsAvailable),
                      headsUsed + Math.max(2, headsUsed / 4)));
      return;
    }
    if (rows.size() >= batchSize && headsExpensive) {
      // Full, and the heads cost most of it: half as many next time, with longer runs behind
      // them, down to runs of LONG_RUN events.
      next = Math.max((batchSize + LONG_RUN - 1) / LONG_RUN, headsUsed / 2);
    } else if (rows.size() >= batchSize && headsUsed >= limit) {
      // Full, with every head it asked for: more are pending. Grown by a quarter instead, a relay
      // started against a backlog spent its first dozen claims reading runs behind too few heads,
      // at twice the cost of a claim of heads alone.
      next = 2L * limit;
    } else if (rows.size() >= batchSize) {
      next = headsUsed + Math.max(2, headsUsed / 4);
    } else if (headsSearched == limit) {
      next = 2L * limit;
      headsAvailable = Integer.MAX_VALUE;
    }
    headsToClaim = (int) Math.max(1, Math.min(Math.min(maxHeads(), headsAvailable), next));
  }

  /** Most heads one claim asks for: each owned head holds an advisory lock until commit. */
  private int maxHeads() {
    return Math.min(batchSize, MAX_HEADS);
  }
}

package dev.pgoutbox.relay.internal;

import dev.pgoutbox.relay.DeadLetterPolicy;
import dev.pgoutbox.relay.Ordering;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.exception.DataAccessException;
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
  private final int maxBatchBytes;
  private final long settleNanos;
  private final long fullScanEveryNanos;
  private final long fullScanCostFactor;
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

  /** Reads the payload and headers of the claimed rows the claim left out for their size. */
  private final RenderedStatement bodiesStatement;

  private final int inlineBytes;

  private int headsToClaim;

  /**
   * Claims scan from here. Published rows leave dead entries at the front of the pending index
   * until vacuum removes them (never, while vacuum is off or held back by an old transaction);
   * starting here skips them, so a claim's cost does not grow with the published history.
   *
   * <p>It rises to the first head a claim found only after that head stood for {@link
   * #SETTLE_NANOS}: a writer that took a lower position but committed a little later (the common
   * late commit, with several writers) is still found by the next claims. Rows below it that become
   * claimable later (a backoff ends, another relay releases an aggregate, a commit later than that)
   * are found by the full scan from position 0 that runs once every {@link #FULL_SCAN_EVERY_NANOS}:
   * they wait at most that long, and nothing is skipped for good. A claim that finds nothing from
   * the mark on looks from position 0 at once (at most once per settle time): a late commit is
   * announced by its notification, and waiting for the next full scan would add up to a second.
   */
  private long lowWater;

  /** The lowest first head found since {@link #risingSince}: the next value of lowWater. */
  private long risingTo = Long.MAX_VALUE;

  private long risingSince = System.nanoTime();
  private long nextFullScanNanos = System.nanoTime();
  private long lastFullScanNanos = System.nanoTime();
  private long lastFullScanCostNanos;
  private boolean fullScan;
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
    this.maxBatchBytes = maxBatchBytes;
    this.inlineBytes = ClaimStatements.inlineBytes(batchSize, maxBatchBytes);
    this.bodiesStatement = ClaimStatements.bodies(schema);
    this.fullScanCostFactor = tuning.fullScanCostFactor();
    this.settleNanos = tuning.settleNanos();
    this.fullScanEveryNanos = tuning.fullScanEveryNanos();
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
    nextFullScanNanos = System.nanoTime();
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
    long sinceFullScan = System.nanoTime() - lastFullScanNanos;
    if (rows.isEmpty()
        && !fullScan
        && sinceFullScan >= Math.max(settleNanos, fullScanCostFactor * lastFullScanCostNanos)) {
      // Nothing from the low-water mark on, yet the relay was woken (or polled): a row below the
      // mark may have committed late, its writer held up between its insert and its commit for
      // longer than the settle time (a busy core, a slow trigger). Look from the start now, not at
      // the next full scan up to a second away. An empty claim is cheap: nothing is pending but
      // what other relays hold.
      nextFullScanNanos = System.nanoTime();
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
    if (fullScan) {
      lastFullScanCostNanos = System.nanoTime() - started;
      long earliestNext = started + fullScanCostFactor * lastFullScanCostNanos;
      if (earliestNext - nextFullScanNanos > 0) {
        nextFullScanNanos = earliestNext;
      }
    }
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
    long from = scanFrom();
    List<Sized> fetched = new ArrayList<>(batchSize);
    read(
        tx,
        statement,
        ps -> {
          ps.setLong(ClaimStatements.UNORDERED_SCAN_FROM, from);
          ps.setInt(ClaimStatements.UNORDERED_BATCH_SIZE, batchSize);
        },
        (row, rs) -> fetched.add(sized(row, rs, 1)));
    afterScan(fetched.isEmpty() ? null : fetched.get(0).row().position());
    fetched.sort(Comparator.comparingLong(r -> r.row().position()));
    List<ClaimedRow> rows = withinBudget(tx, fetched, false);
    mayHaveLeftEvents = rows.size() < fetched.size();
    return rows;
  }

  /** The position this claim's scan starts from: 0 for a full scan, else the low-water mark. */
  private long scanFrom() {
    long now = System.nanoTime();
    fullScan = now - nextFullScanNanos >= 0;
    if (fullScan) {
      lastFullScanNanos = now;
      nextFullScanNanos = now + fullScanEveryNanos;
      return 0;
    }
    return lowWater;
  }

  /**
   * A writer committed events from {@code position} on (its notification said so): the next claim
   * looks from there if the low-water mark has risen past it. This finds the late commit the settle
   * time did not wait for while claims keep finding newer rows, where an empty claim's look from
   * position 0 never runs.
   */
  void committedFrom(long position) {
    if (position < lowWater) {
      lowWater = position;
      risingTo = Long.MAX_VALUE;
      risingSince = System.nanoTime();
    }
  }

  /** Moves the low-water mark: down at once, up to a first head only once it has settled. */
  private void afterScan(@Nullable Long firstFound) {
    if (firstFound == null) {
      return;
    }
    long now = System.nanoTime();
    if (firstFound < lowWater) {
      lowWater = firstFound;
      risingTo = Long.MAX_VALUE;
      risingSince = now;
      return;
    }
    risingTo = Math.min(risingTo, firstFound);
    if (now - risingSince >= settleNanos) {
      lowWater = risingTo;
      risingTo = Long.MAX_VALUE;
      risingSince = now;
    }
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
    long from = scanFrom();
    int limit = headsToClaim;
    if (fullScan) {
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

    List<Sized> fetched = new ArrayList<>(batchSize);
    long[] firstHead = {Long.MAX_VALUE};
    int[] headsCounted = {0};
    int[] headsSearched = {0};
    int[] longestRun = {0};
    long started = System.nanoTime();
    read(
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
          fetched.add(sized(row, rs, placeInRun));
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
    afterScan(headsFound == 0 ? null : firstHead[0]);
    lastHeadsFound = headsFound == 0 ? limit : headsFound;
    // Within an aggregate, the claim's order: position, or commit order for a parked-only claim.
    Comparator<Sized> runOrder =
        Comparator.comparing((Sized r) -> r.row().aggregate(), AGGREGATE_ORDER)
            .thenComparingInt(Sized::placeInRun);
    fetched.sort(runOrder);
    List<Sized> due = cutAtFirstRowNotDue(fetched);
    // The byte budget deals rows out in the claim's rounds: every head, then every second row, ...
    due.sort(Comparator.comparingInt(Sized::placeInRun).thenComparingLong(r -> r.row().position()));
    List<ClaimedRow> rows = withinBudget(tx, due, true);
    java.util.Map<UUID, Integer> placeInRun = new java.util.HashMap<>();
    for (Sized sized : due) {
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

  /** A run ends before its first row that is not due (left by a mode switch or an admin action). */
  private static List<Sized> cutAtFirstRowNotDue(List<Sized> fetched) {
    List<Sized> rows = new ArrayList<>(fetched.size());
    ClaimedRow blocked = null;
    for (Sized sized : fetched) {
      ClaimedRow row = sized.row();
      if (blocked != null && blocked.sameAggregate(row)) {
        continue;
      }
      if (!row.due()) {
        blocked = row;
        continue;
      }
      rows.add(sized);
    }
    return rows;
  }

  /**
   * A claimed row with the bytes of its payload and headers, and whether they are still to be read
   * (the claim leaves out rows stored larger than {@link #inlineBytes}).
   */
  private record Sized(ClaimedRow row, int placeInRun, long bytes, boolean bodyLeftOut) {}

  private static Sized sized(ClaimedRow row, ResultSet rs, int placeInRun) throws SQLException {
    long bodyBytes = rs.getLong(ClaimStatements.BODY_BYTES);
    if (rs.wasNull()) {
      // Came inline, within inlineBytes as stored: its length is near enough.
      String headers = row.headers();
      return new Sized(
          row,
          placeInRun,
          row.payload().length() + (headers == null ? 0 : headers.length()),
          false);
    }
    return new Sized(row, placeInRun, bodyBytes, true);
  }

  /**
   * The rows of {@code candidates} (in the order the budget deals them out) whose payloads and
   * headers fit in {@link #maxBatchBytes} together, the first always (an event larger than the
   * budget goes out alone), then read the payloads and headers the claim left out. Under strict
   * ordering a row that does not fit ends its aggregate's run, so each aggregate keeps a prefix of
   * its run; rows left are locked until commit, and claimed again by the next batch.
   */
  private List<ClaimedRow> withinBudget(DSLContext tx, List<Sized> candidates, boolean strict) {
    long total = 0;
    boolean anyLeftOut = false;
    for (Sized candidate : candidates) {
      total += candidate.bytes();
      anyLeftOut |= candidate.bodyLeftOut();
    }
    if (total <= maxBatchBytes && !anyLeftOut) {
      List<ClaimedRow> rows = new ArrayList<>(candidates.size());
      for (Sized candidate : candidates) {
        rows.add(candidate.row());
      }
      return rows;
    }
    List<Sized> kept = new ArrayList<>(candidates.size());
    java.util.Set<ClaimedRow.AggregateKey> ended = new java.util.HashSet<>();
    long used = 0;
    for (Sized candidate : candidates) {
      if (strict && !ended.isEmpty() && ended.contains(candidate.row().aggregate())) {
        continue;
      }
      if (!kept.isEmpty() && used + candidate.bytes() > maxBatchBytes) {
        if (strict) {
          ended.add(candidate.row().aggregate());
        }
        continue;
      }
      kept.add(candidate);
      used += candidate.bytes();
    }
    java.util.Map<UUID, String[]> bodies = readBodies(tx, kept);
    List<ClaimedRow> rows = new ArrayList<>(kept.size());
    for (Sized candidate : kept) {
      ClaimedRow row = candidate.row();
      if (candidate.bodyLeftOut()) {
        String[] body = bodies.get(row.id());
        if (body == null) {
          throw new IllegalStateException("claimed row " + row.id() + " was not found again");
        }
        row = row.withBody(body[0], body[1]);
      }
      rows.add(row);
    }
    return rows;
  }

  /** The payloads and headers of the rows of {@code kept} that the claim left out, by id. */
  private java.util.Map<UUID, String[]> readBodies(DSLContext tx, List<Sized> kept) {
    List<UUID> ids = new ArrayList<>();
    for (Sized candidate : kept) {
      if (candidate.bodyLeftOut()) {
        ids.add(candidate.row().id());
      }
    }
    java.util.Map<UUID, String[]> bodies = new java.util.HashMap<>();
    if (ids.isEmpty()) {
      return bodies;
    }
    tx.connection(
        connection -> {
          try (PreparedStatement ps = connection.prepareStatement(bodiesStatement.sql())) {
            ps.setArray(
                ClaimStatements.BODIES_IDS, connection.createArrayOf("uuid", ids.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                bodies.put(
                    rs.getObject(1, UUID.class), new String[] {rs.getString(2), rs.getString(3)});
              }
            }
          } catch (SQLException e) {
            throw new DataAccessException(
                "reading large claimed events failed: " + e.getMessage(), e);
          }
        });
    return bodies;
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

  /** Sets the binds of the claim statement. */
  private interface Binder {
    void bind(PreparedStatement statement) throws SQLException;
  }

  /** Receives each claimed row, with the result set positioned on it for extra columns. */
  private interface RowSink {
    void accept(ClaimedRow row, ResultSet rs) throws SQLException;
  }

  /**
   * Runs {@code claim} on {@code tx}'s connection with the binds {@code binder} sets, and reads
   * each row by column index ({@link ClaimStatements#ID} on) with JDBC getters: no per-value
   * converter lookup, and payload and headers stay the text PostgreSQL sent.
   */
  private void read(DSLContext tx, RenderedStatement claim, Binder binder, RowSink sink) {
    tx.connection(
        connection -> {
          try (PreparedStatement ps = connection.prepareStatement(claim.sql())) {
            binder.bind(ps);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                String payload = rs.getString(ClaimStatements.PAYLOAD);
                int attempts = rs.getInt(ClaimStatements.ATTEMPTS);
                sink.accept(
                    new ClaimedRow(
                        rs.getObject(ClaimStatements.ID, UUID.class),
                        rs.getLong(ClaimStatements.POSITION),
                        rs.getString(ClaimStatements.AGGREGATE_TYPE),
                        rs.getString(ClaimStatements.AGGREGATE_ID),
                        rs.getString(ClaimStatements.EVENT_TYPE),
                        payload == null ? "null" : payload,
                        rs.getString(ClaimStatements.HEADERS),
                        attempts,
                        rs.getObject(ClaimStatements.CREATED_AT, OffsetDateTime.class),
                        rs.getBoolean(ClaimStatements.DUE)),
                    rs);
              }
            }
          } catch (SQLException e) {
            throw new DataAccessException("claim failed: " + e.getMessage(), e);
          }
        });
  }
}

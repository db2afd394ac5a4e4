package dev.pgoutbox.admin;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.core.internal.Retention;
import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.Completion;
import dev.pgoutbox.relay.DeadLetterPolicy;
import dev.pgoutbox.relay.OutboxStats;
import dev.pgoutbox.relay.OutboxTableStats;
import dev.pgoutbox.relay.WalSlotStats;
import dev.pgoutbox.relay.internal.StatsReader;
import dev.pgoutbox.relay.internal.WalSlotQuery;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.Record1;
import org.jooq.ResultQuery;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Operations on an outbox: its backlog, its dead letters, and retention.
 *
 * <pre>{@code
 * OutboxAdmin admin = OutboxAdmin.builder().dataSource(dataSource).schema("outbox").build();
 * admin.stats();                                   // pending, lag, dead letters, blocked aggregates
 * admin.deadLetters(50, 0).forEach(d -> log.info("{} {}", d.id(), d.lastError()));
 * admin.retry(eventId);                            // publish it again, then the events behind it
 * admin.scheduleRetention(executor, Duration.ofHours(1), Duration.ofDays(7), 1_000);
 * }</pre>
 *
 * Each method runs in its own short transaction(s) on the given data source. Thread-safe.
 *
 * <p>What it can show of delivered events depends on the relay's {@link Completion}: under {@link
 * Completion#DELETE}, the {@code WalRelay}'s default, the table keeps no history of delivered
 * events (only pending, parked and dead ones), so {@link #publishedWithin} answers 0, {@link
 * #purgeProcessed} finds nothing and {@link #event} of a delivered event is empty. See
 * docs/wal-completion.md.
 */
public final class OutboxAdmin {

  private static final Logger LOG = LoggerFactory.getLogger(OutboxAdmin.class);

  /** Largest page of {@link #deadLetters}. */
  public static final int MAX_PAGE = 1_000;

  /**
   * Largest selection {@link #retryable}, {@link #discardable}, {@link #retryEvents} and {@link
   * #discardEvents} take: {@value}.
   */
  public static final int MAX_SELECTION = 100_000;

  /** Most blocked-aggregate heads {@link #status} lists: {@value}. */
  public static final int STATUS_BLOCKED_HEADS = 20;

  /** {@link #status()}: the oldest pending event may be this old before the outbox is degraded. */
  public static final Duration DEFAULT_STATUS_MAX_PENDING_AGE = Duration.ofMinutes(5);

  /**
   * {@link #status()}: a transaction may be open this long before the outbox is degraded (the relay
   * logs a warning past the same age).
   */
  public static final Duration DEFAULT_STATUS_MAX_TRANSACTION_AGE = Duration.ofMinutes(10);

  /** Largest {@code batchSize} of {@link #purgeProcessed}: {@value}. The same as the inbox's. */
  public static final int MAX_PURGE_BATCH_SIZE = Retention.MAX_PURGE_BATCH_SIZE;

  private final AdminDatabase db;
  private final DSLContext dsl;
  private final String schema;
  private final StatsReader stats;
  private final PendingIndexes indexes;
  private final DeadLetterSearch deadLetterSearch;
  private final BacklogReads reads;
  private final EventWrites writes;

  private OutboxAdmin(DataSource dataSource, String schema) {
    this.db = new AdminDatabase(dataSource, schema);
    this.dsl = db.dsl;
    this.schema = schema;
    this.stats = new StatsReader(dsl, schema);
    this.indexes = new PendingIndexes(db, stats);
    this.deadLetterSearch = new DeadLetterSearch(db);
    this.reads = new BacklogReads(db);
    this.writes = new EventWrites(db);
  }

  /** A builder of an {@code OutboxAdmin}; {@link Builder#dataSource} is required. */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Pending events, lag, dead letters, blocked aggregates, the oldest open transaction and the
   * table's dead rows and size: what the relays report to their listener's {@code onStats}, read by
   * the same statements.
   */
  public OutboxStats stats() {
    return stats.stats();
  }

  /** Unprocessed events that are not dead. */
  public long pendingCount() {
    return stats.pendingCount();
  }

  /** Age of the oldest pending event, by database time; zero when nothing is pending. */
  public Duration oldestPendingAge() {
    return stats.oldestPendingAge();
  }

  /** Longest window {@link #publishedWithin} counts over: {@value} minutes. */
  public static final int MAX_PUBLISHED_WINDOW_MINUTES = 60;

  /**
   * Events published in the last {@code window}, by database time: the rows whose {@code
   * processed_at} falls in it, read from the index retention uses ({@code
   * outbox_events_processed_at_idx}), so the cost follows the events of the window, never the
   * history. Divide by the window for a publish rate. Counts only what is still in the table: under
   * {@link Completion#DELETE} published rows are gone and this is 0, and retention that purges
   * younger than the window undercounts.
   *
   * @throws IllegalArgumentException if {@code window} is not positive or longer than {@value
   *     #MAX_PUBLISHED_WINDOW_MINUTES} minutes
   */
  public long publishedWithin(Duration window) {
    requirePositive(window, "window");
    if (window.compareTo(Duration.ofMinutes(MAX_PUBLISHED_WINDOW_MINUTES)) > 0) {
      throw new IllegalArgumentException(
          "window must be at most " + MAX_PUBLISHED_WINDOW_MINUTES + " minutes, was " + window);
    }
    return reads.publishedWithin(window);
  }

  /**
   * Dead events not yet retried or discarded. Reads the index of failing events ({@code
   * outbox_events_failing_idx}), not the pending backlog.
   */
  public long deadLetterCount() {
    return stats.deadLetterCount();
  }

  /** The statement behind {@link #deadLetterCount}, for the test of its plan. */
  ResultQuery<Record1<Integer>> deadLetterCountQuery() {
    return stats.deadLetterCountQuery();
  }

  /**
   * Aggregates whose oldest unprocessed event is dead or backing off. Reads the index of failing
   * events ({@code outbox_events_failing_idx}), not the pending backlog.
   */
  public long blockedAggregates() {
    return stats.blockedAggregates();
  }

  /** The statement behind {@link #blockedAggregates}, for the test of its plan. */
  ResultQuery<Record1<Integer>> blockedAggregatesQuery() {
    return stats.blockedAggregatesQuery();
  }

  /**
   * The state of a WAL relay's replication slot ({@code WalRelay#slotName()}) reading this outbox:
   * its lag in bytes and in time ({@link WalSlotStats#lagTime()}), whether a reader streams it, its
   * {@code wal_status}; empty when no such slot exists in this database. Works from any process,
   * with or without a relay running.
   */
  public Optional<WalSlotStats> walSlot(String slotName) {
    requireNonNull(slotName, "slotName must not be null");
    return db.read(
        "read pg_replication_slots",
        () ->
            Optional.ofNullable(dsl.connectionResult(c -> WalSlotQuery.read(c, schema, slotName))));
  }

  /**
   * Age of the oldest open transaction in this database (it holds back vacuum); zero if none. A
   * session's counts from its start, a prepared transaction's (two-phase commit) from its {@code
   * PREPARE}: one its transaction manager never resolved has no session left in {@code
   * pg_stat_activity} and holds vacuum back all the same.
   */
  public Duration oldestTransactionAge() {
    return stats.oldestTransactionAge();
  }

  /**
   * Live and dead rows, autovacuum runs and sizes of {@code outbox_events}, from {@code
   * pg_stat_user_tables} (estimates PostgreSQL keeps, no scan of the table); {@link
   * OutboxTableStats#EMPTY} if PostgreSQL has no statistics for it.
   */
  public OutboxTableStats tableStats() {
    return stats.tableStats();
  }

  /**
   * Rebuilds the two indexes of pending rows the relay's claim reads ({@code
   * outbox_events_pending_idx}, {@code outbox_events_pending_aggregate_idx}) with {@code REINDEX
   * INDEX CONCURRENTLY}, and returns the bytes this freed.
   *
   * <p>While the relay keeps up these indexes take a few pages. A window in which vacuum is held
   * back (a long transaction anywhere in the database, a replica with {@code hot_standby_feedback})
   * fills them with entries of published events; vacuum removes those entries afterwards, but an
   * index never gives its pages back, and the claim then reads the sparse pages: in the soak, after
   * a 5-minute window, claims stayed 4x slower until the rebuild (see docs/alerts.md). Run it when
   * {@link OutboxTableStats#pendingIndexBytes()} stays far above what the pending rows need, once
   * the long transaction has ended (the rebuild waits for transactions older than it).
   *
   * <p>Writers and relays keep going while it runs: a concurrent rebuild builds the new index
   * beside the old one and swaps them, taking no lock that blocks inserts, claims or marks. It
   * needs to own the table, and runs outside any transaction (on a connection of its own, in
   * autocommit). An earlier rebuild that failed half way leaves an invalid copy ({@code
   * ..._ccnew}); those are dropped first.
   *
   * @return bytes the two indexes took before minus after (0 if they did not shrink)
   * @throws OutboxException if PostgreSQL refuses (e.g. the role does not own the table)
   */
  public long rebuildPendingIndexes() {
    return indexes.rebuild();
  }

  /**
   * A page of dead letters, oldest first.
   *
   * @param limit page size, 1 to {@value #MAX_PAGE}
   * @param afterPosition 0 for the first page, else the last {@link DeadLetter#position()} seen
   */
  public List<DeadLetter> deadLetters(int limit, long afterPosition) {
    return reads.deadLetters(limit, afterPosition);
  }

  /**
   * Makes one unprocessed event (dead or backing off) due at once, with its attempts reset.
   *
   * <p>What this promises for a dead letter depends on the {@link DeadLetterPolicy} it died under:
   *
   * <ul>
   *   <li>{@link DeadLetterPolicy#HOLD_AGGREGATE}: nothing behind it was published, so under strict
   *       ordering it goes out next, then the events queued behind it, in order;
   *   <li>{@link DeadLetterPolicy#RELEASE_AGGREGATE}: its successors were released while it was
   *       dead and may already be published. It is published once more, on its own and after them:
   *       never concurrently with them (a relay holding its aggregate keeps every other relay out
   *       until it commits), but late; consumers see it out of order.
   * </ul>
   *
   * @return whether such an event existed; false, changing nothing, for an event that is merely
   *     pending (neither dead nor backing off: its attempts stay as they are) or already processed
   */
  public boolean retry(UUID eventId) {
    return writes.retry(eventId);
  }

  /** Retries every dead or backing-off event of one aggregate; returns how many. */
  public int retryAggregate(String aggregateType, String aggregateId) {
    return writes.retryAggregate(aggregateType, aggregateId);
  }

  /** Retries every dead or backing-off event of one event type; returns how many. */
  public int retryEventType(String eventType) {
    return writes.retryEventType(eventType);
  }

  /**
   * Deletes one dead letter for good. Under {@link DeadLetterPolicy#HOLD_AGGREGATE} this releases
   * the events queued behind it.
   *
   * @return whether a dead letter with that id existed
   */
  public boolean discard(UUID eventId) {
    return writes.discard(eventId);
  }

  /**
   * Deletes processed events older than {@code olderThan}, {@code batchSize} rows per statement
   * (each its own transaction, so locks and WAL bursts stay small), until none is left. Nothing to
   * do under {@link Completion#DELETE} (the {@code WalRelay}'s default), which keeps no processed
   * rows.
   *
   * @return rows deleted
   */
  public long purgeProcessed(Duration olderThan, int batchSize) {
    return writes.purgeProcessed(olderThan, batchSize);
  }

  /**
   * Runs {@link #purgeProcessed} every {@code every} on the host's executor. Failures are logged
   * and the next run tries again. Cancel the returned future to stop. {@link
   * dev.pgoutbox.core.Inbox#scheduleRetention} does the same for the inbox.
   *
   * @throws IllegalArgumentException if {@code every} is not positive, {@code olderThan} is
   *     negative or {@code batchSize} is not between 1 and {@value #MAX_PURGE_BATCH_SIZE}
   */
  public ScheduledFuture<?> scheduleRetention(
      ScheduledExecutorService executor, Duration every, Duration olderThan, int batchSize) {
    return Retention.schedule(
        executor,
        every,
        olderThan,
        batchSize,
        () -> purgeProcessed(olderThan, batchSize),
        LOG,
        "pgoutbox-admin[" + schema + "]",
        "processed events");
  }

  /**
   * A page of dead letters, filtered and ordered as {@code query} says, payloads left out (read one
   * with {@link #event(UUID, boolean)}).
   */
  public List<StoredEvent> deadLetters(DeadLetterQuery query) {
    return deadLetterSearch.page(query);
  }

  /**
   * One event, in whatever state: its headers, attempts, last error and times; its payload only
   * when {@code withPayload}. Empty if no event has this id (never written, discarded, or purged).
   */
  public Optional<StoredEvent> event(UUID eventId, boolean withPayload) {
    return reads.event(eventId, withPayload);
  }

  /**
   * The events {@link #retryEvents} would reset among those {@code selector} names: unpublished
   * ones that are dead or backing off, in position order, at most {@code limit}, payloads left out.
   * A merely pending event is never touched by a retry.
   *
   * @param limit 1 to {@value #MAX_SELECTION}
   */
  public List<StoredEvent> retryable(EventSelector selector, int limit) {
    return reads.select(
        "list the events to retry",
        EventConditions.selected(selector).and(EventConditions.retryable()),
        limit);
  }

  /**
   * The dead letters {@link #discardEvents} would delete among those {@code selector} names, in
   * position order, at most {@code limit}, payloads left out.
   *
   * @param limit 1 to {@value #MAX_SELECTION}
   */
  public List<StoredEvent> discardable(EventSelector selector, int limit) {
    return reads.select(
        "list the dead letters to discard",
        EventConditions.selected(selector).and(EventConditions.discardable()),
        limit);
  }

  /**
   * Retries exactly these events, those of them still dead or backing off (as {@link #retryable}
   * listed them; an event published or reset meanwhile is left alone), in one transaction. See
   * {@link #retry(UUID)} for what a retry promises.
   *
   * @return how many were reset
   */
  public int retryEvents(Collection<UUID> eventIds) {
    return writes.retryEvents(eventIds);
  }

  /**
   * Deletes exactly these dead letters, those of them still dead and unpublished (as {@link
   * #discardable} listed them), in one transaction. See {@link #discard(UUID)}.
   *
   * @return how many were deleted
   */
  public int discardEvents(Collection<UUID> eventIds) {
    return writes.discardEvents(eventIds);
  }

  /**
   * The event at the head of each blocked aggregate (the aggregates {@link #blockedAggregates}
   * counts: its oldest unprocessed event is dead or backing off), oldest first, at most {@code
   * limit}, payloads left out. {@link StoredEvent#state()} says why it waits.
   *
   * @param limit 1 to {@value #MAX_PAGE}
   */
  public List<StoredEvent> blockedAggregateHeads(int limit) {
    return reads.blockedAggregateHeads(limit);
  }

  /**
   * The relay instances registered on this outbox ({@code outbox_relays}), live or not, oldest
   * first. An instance whose heartbeat is older than 30 s is not {@link RelayInstance#alive()}: it
   * crashed or lost the database (one that stops cleanly deletes its row).
   */
  public List<RelayInstance> relays() {
    return reads.relays();
  }

  /**
   * {@link #status(Duration, Duration)} with {@link #DEFAULT_STATUS_MAX_PENDING_AGE} and {@link
   * #DEFAULT_STATUS_MAX_TRANSACTION_AGE}.
   */
  public OutboxStatus status() {
    return status(DEFAULT_STATUS_MAX_PENDING_AGE, DEFAULT_STATUS_MAX_TRANSACTION_AGE);
  }

  /**
   * Everything an operator checks first, and the problems found. The outbox is degraded when: there
   * are dead letters; no relay is alive, or a registered relay stopped beating (it crashed); the
   * oldest pending event is older than {@code maxPendingAge}; a transaction has been open longer
   * than {@code maxTransactionAge} (it holds back vacuum of the outbox); or a WAL relay's slot is
   * lost, has no reader, or is missing while live WAL relays are registered to read it. Aggregates
   * merely backing off are listed, not a problem: the relay tries them again by itself.
   *
   * @throws IllegalArgumentException if a threshold is not positive
   */
  public OutboxStatus status(Duration maxPendingAge, Duration maxTransactionAge) {
    requirePositive(maxPendingAge, "maxPendingAge");
    requirePositive(maxTransactionAge, "maxTransactionAge");
    return new StatusReport(this).read(maxPendingAge, maxTransactionAge);
  }

  /**
   * Checks that the outbox exists in this schema and that the role may do what an operator asks:
   * read it (always), reset and delete events ({@code writes}). Answers from the catalogs, before
   * any statement could fail half way.
   *
   * @throws OutboxException naming the missing schema, table or privilege and the role
   */
  public void checkAccess(boolean writes) {
    new AccessCheck(db).check(writes);
  }

  private static void requirePositive(Duration value, String name) {
    requireNonNull(value, name + " must not be null");
    if (value.isNegative() || value.isZero()) {
      throw new IllegalArgumentException(name + " must be positive, was " + value);
    }
  }

  /** The schema that holds the outbox. */
  public String schema() {
    return schema;
  }

  @Override
  public String toString() {
    return "OutboxAdmin[schema=" + schema + "]";
  }

  /** Builds an {@link OutboxAdmin}; not thread-safe. */
  public static final class Builder {
    private @Nullable DataSource dataSource;
    private String schema = OutboxSchema.DEFAULT_SCHEMA;

    private Builder() {}

    /** Where the outbox lives; each admin call takes a connection for one short transaction. */
    public Builder dataSource(DataSource dataSource) {
      this.dataSource = requireNonNull(dataSource, "dataSource must not be null");
      return this;
    }

    /**
     * The schema that holds the outbox. Default {@value OutboxSchema#DEFAULT_SCHEMA}.
     *
     * @throws IllegalArgumentException if {@code schema} is not a plain identifier
     */
    public Builder schema(String schema) {
      this.schema = OutboxSchema.requireValidName(schema);
      return this;
    }

    /**
     * The admin.
     *
     * @throws IllegalStateException if no data source was set
     */
    public OutboxAdmin build() {
      if (dataSource == null) {
        throw new IllegalStateException("dataSource is required: call dataSource(...)");
      }
      return new OutboxAdmin(dataSource, schema);
    }
  }
}

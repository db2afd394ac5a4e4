package dev.pgoutbox.relay;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_DEAD_LETTERS;
import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static dev.pgoutbox.db.jooq.Tables.OUTBOX_RELAYS;
import static java.util.Objects.requireNonNull;
import static org.jooq.impl.DSL.selectOne;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.core.internal.Retention;
import dev.pgoutbox.core.internal.SearchPath;
import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.db.jooq.tables.OutboxEvents;
import dev.pgoutbox.relay.internal.FleetRegistry;
import dev.pgoutbox.relay.internal.Sql;
import dev.pgoutbox.relay.internal.WalSlot;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import javax.sql.DataSource;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.Record;
import org.jooq.Record1;
import org.jooq.ResultQuery;
import org.jooq.SQLDialect;
import org.jooq.exception.DataAccessException;
import org.jooq.impl.DSL;
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
 * Completion#DELETE}, the {@link WalRelay}'s default, the table keeps no history of delivered
 * events (only pending, parked and dead ones), so {@link #publishedWithin} answers 0, {@link
 * #purgeProcessed} finds nothing and {@link #event} of a delivered event is empty. See
 * docs/wal-completion.md.
 */
public final class OutboxAdmin {

  private static final Logger LOG = LoggerFactory.getLogger(OutboxAdmin.class);

  private static final ObjectReader HISTORY_READER = new ObjectMapper().reader();

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

  /** The indexes of pending rows the claim reads, as schema V1 names them. */
  private static final List<String> PENDING_INDEXES =
      List.of("outbox_events_pending_idx", "outbox_events_pending_aggregate_idx");

  private final DSLContext dsl;
  private final String schema;

  private OutboxAdmin(DataSource dataSource, String schema) {
    this.schema = schema;
    // Every statement of the admin runs under the fixed search_path (nothing planted on the
    // host's path can run in it); see SearchPath.
    this.dsl =
        DSL.using(
            SearchPath.pinned(dataSource), SQLDialect.POSTGRES, OutboxSchema.jooqSettings(schema));
  }

  /** A builder of an {@code OutboxAdmin}; {@link Builder#dataSource} is required. */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Pending events, lag, dead letters, blocked aggregates, the oldest open transaction and the
   * table's dead rows and size.
   */
  public OutboxStats stats() {
    return wrap(
        "read the outbox stats",
        () ->
            new OutboxStats(
                pendingCount(),
                oldestPendingAge(),
                deadLetterCount(),
                blockedAggregates(),
                oldestTransactionAge(),
                tableStats()));
  }

  /** Unprocessed events that are not dead. */
  public long pendingCount() {
    return wrap(
        "count pending events",
        () ->
            dsl.selectCount()
                .from(OUTBOX_EVENTS)
                .where(OUTBOX_EVENTS.PROCESSED_AT.isNull())
                .and(OUTBOX_EVENTS.DEAD_AT.isNull())
                .fetchOne(0, Long.class));
  }

  /** Age of the oldest pending event, by database time; zero when nothing is pending. */
  public Duration oldestPendingAge() {
    return wrap(
        "read the oldest pending event",
        () -> {
          Record1<Long> row =
              dsl.select(DSL.field(Sql.ageMillis("{0}"), Long.class, OUTBOX_EVENTS.CREATED_AT))
                  .from(OUTBOX_EVENTS)
                  .where(OUTBOX_EVENTS.PROCESSED_AT.isNull())
                  .and(OUTBOX_EVENTS.DEAD_AT.isNull())
                  .orderBy(OUTBOX_EVENTS.POSITION)
                  .limit(1)
                  .fetchOne();
          return row == null ? Duration.ZERO : Duration.ofMillis(Math.max(0, row.value1()));
        });
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
    return wrap(
        "count published events",
        () ->
            dsl.selectCount()
                .from(OUTBOX_EVENTS)
                .where(OUTBOX_EVENTS.PROCESSED_AT.gt(Sql.clockTimestampPlus(window.negated())))
                .fetchOne(0, Long.class));
  }

  /**
   * Dead events not yet retried or discarded. Reads the index of failing events ({@code
   * outbox_events_failing_idx}), not the pending backlog.
   */
  public long deadLetterCount() {
    return wrap("count dead letters", () -> deadLetterCountQuery().fetchOne(0, Long.class));
  }

  /** The statement behind {@link #deadLetterCount}, for the test of its plan. */
  ResultQuery<Record1<Integer>> deadLetterCountQuery() {
    return dsl.selectCount().from(OUTBOX_DEAD_LETTERS);
  }

  /**
   * Aggregates whose oldest unprocessed event is dead or backing off. Reads the index of failing
   * events ({@code outbox_events_failing_idx}), not the pending backlog.
   */
  public long blockedAggregates() {
    return wrap("count blocked aggregates", () -> blockedAggregatesQuery().fetchOne(0, Long.class));
  }

  /** The statement behind {@link #blockedAggregates}, for the test of its plan. */
  ResultQuery<Record1<Integer>> blockedAggregatesQuery() {
    OutboxEvents e = OUTBOX_EVENTS.as("e");
    return dsl.selectCount().from(e).where(blockedHead(e));
  }

  /**
   * The state of a WAL relay's replication slot ({@link WalRelay#slotName()}) reading this outbox:
   * its lag in bytes and in time ({@link WalSlotStats#lagTime()}), whether a reader streams it, its
   * {@code wal_status}; empty when no such slot exists in this database. Works from any process,
   * with or without a relay running.
   */
  public Optional<WalSlotStats> walSlot(String slotName) {
    requireNonNull(slotName, "slotName must not be null");
    return wrap(
        "read pg_replication_slots",
        () -> Optional.ofNullable(dsl.connectionResult(c -> WalSlot.read(c, schema, slotName))));
  }

  /**
   * Age of the oldest open transaction in this database (it holds back vacuum); zero if none. A
   * session's counts from its start, a prepared transaction's (two-phase commit) from its {@code
   * PREPARE}: one its transaction manager never resolved has no session left in {@code
   * pg_stat_activity} and holds vacuum back all the same.
   */
  public Duration oldestTransactionAge() {
    return wrap(
        "read pg_stat_activity and pg_prepared_xacts",
        () -> {
          Long millis =
              dsl.resultQuery(
                      "select coalesce(max((extract(epoch from clock_timestamp() - began) * 1000)::bigint), 0)"
                          + " from (select xact_start as began from pg_stat_activity"
                          + " where datname = current_database()"
                          + " and (backend_xid is not null or backend_xmin is not null)"
                          + " and pid <> pg_backend_pid()"
                          + " union all select prepared from pg_prepared_xacts"
                          + " where database = current_database()) open_transactions")
                  .fetchOne(0, Long.class);
          return Duration.ofMillis(millis == null ? 0 : Math.max(0, millis));
        });
  }

  /**
   * Live and dead rows, autovacuum runs and sizes of {@code outbox_events}, from {@code
   * pg_stat_user_tables} (estimates PostgreSQL keeps, no scan of the table); {@link
   * OutboxTableStats#EMPTY} if PostgreSQL has no statistics for it.
   */
  public OutboxTableStats tableStats() {
    return wrap(
        "read pg_stat_user_tables",
        () -> {
          Record row =
              dsl.resultQuery(
                      "select n_live_tup, n_dead_tup, autovacuum_count, last_autovacuum,"
                          + " pg_table_size(relid), pg_indexes_size(relid),"
                          + " (select coalesce(sum(pg_relation_size(i.indexrelid)), 0)"
                          + " from pg_index i join pg_class c on c.oid = i.indexrelid"
                          + " where i.indrelid = relid and c.relname in ({1}, {2}))"
                          + " from pg_stat_user_tables where schemaname = {0}"
                          + " and relname = 'outbox_events'",
                      DSL.val(schema),
                      DSL.val(PENDING_INDEXES.get(0)),
                      DSL.val(PENDING_INDEXES.get(1)))
                  .fetchOne();
          if (row == null) {
            return OutboxTableStats.EMPTY;
          }
          OffsetDateTime lastAutovacuum = row.get(3, OffsetDateTime.class);
          return new OutboxTableStats(
              row.get(0, Long.class),
              row.get(1, Long.class),
              row.get(2, Long.class),
              lastAutovacuum == null ? null : lastAutovacuum.toInstant(),
              row.get(4, Long.class),
              row.get(5, Long.class),
              row.get(6, Long.class));
        });
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
   * a 5-minute window, claims stayed 4x slower until the rebuild (see docs/operations.md). Run it
   * when {@link OutboxTableStats#pendingIndexBytes()} stays far above what the pending rows need,
   * once the long transaction has ended (the rebuild waits for transactions older than it).
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
    long before = tableStats().pendingIndexBytes();
    wrap(
        "rebuild the pending indexes",
        () ->
            dsl.connectionResult(
                connection -> {
                  boolean autoCommit = connection.getAutoCommit();
                  connection.setAutoCommit(true);
                  try {
                    DSLContext session = DSL.using(connection, SQLDialect.POSTGRES);
                    for (String leftover :
                        session
                            .resultQuery(
                                "select c.relname from pg_index i"
                                    + " join pg_class c on c.oid = i.indexrelid"
                                    + " join pg_class t on t.oid = i.indrelid"
                                    + " join pg_namespace n on n.oid = t.relnamespace"
                                    + " where n.nspname = {0} and t.relname = 'outbox_events'"
                                    + " and not i.indisvalid and c.relname like {1}",
                                DSL.val(schema), DSL.val("outbox_events_pending%_ccnew%"))
                            .fetch(0, String.class)) {
                      session.execute(
                          "drop index concurrently if exists {0}", DSL.name(schema, leftover));
                    }
                    for (String index : PENDING_INDEXES) {
                      session.execute("reindex index concurrently {0}", DSL.name(schema, index));
                    }
                    return null;
                  } finally {
                    connection.setAutoCommit(autoCommit);
                  }
                }));
    long after = tableStats().pendingIndexBytes();
    LOG.info(
        "pgoutbox-admin[{}] - Rebuilt the pending indexes: {} bytes before, {} after",
        schema,
        before,
        after);
    return Math.max(0, before - after);
  }

  /**
   * A page of dead letters, oldest first.
   *
   * @param limit page size, 1 to {@value #MAX_PAGE}
   * @param afterPosition 0 for the first page, else the last {@link DeadLetter#position()} seen
   */
  public List<DeadLetter> deadLetters(int limit, long afterPosition) {
    if (limit < 1 || limit > MAX_PAGE) {
      throw new IllegalArgumentException(
          "limit must be between 1 and " + MAX_PAGE + ", was " + limit);
    }
    return wrap(
        "list dead letters",
        () ->
            dsl.selectFrom(OUTBOX_DEAD_LETTERS)
                .where(OUTBOX_DEAD_LETTERS.POSITION.gt(afterPosition))
                .orderBy(OUTBOX_DEAD_LETTERS.POSITION)
                .limit(limit)
                .fetch(
                    r ->
                        new DeadLetter(
                            r.getId(),
                            r.getPosition(),
                            r.getAggregateType(),
                            r.getAggregateId(),
                            r.getEventType(),
                            r.getPayload() == null ? "null" : r.getPayload().data(),
                            r.getAttempts(),
                            r.getLastError(),
                            r.getCreatedAt().toInstant(),
                            r.getDeadAt().toInstant())));
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
    requireNonNull(eventId, "eventId must not be null");
    int updated =
        resetWhere(OUTBOX_EVENTS.ID.eq(eventId).and(retryable()), "retry event " + eventId);
    if (updated > 0) {
      LOG.info("pgoutbox-admin[{}] - Retrying event {}", schema, eventId);
    }
    return updated > 0;
  }

  /** Retries every dead or backing-off event of one aggregate; returns how many. */
  public int retryAggregate(String aggregateType, String aggregateId) {
    requireNonNull(aggregateType, "aggregateType must not be null");
    requireNonNull(aggregateId, "aggregateId must not be null");
    return resetWhere(
        OUTBOX_EVENTS
            .AGGREGATE_TYPE
            .eq(aggregateType)
            .and(OUTBOX_EVENTS.AGGREGATE_ID.eq(aggregateId))
            .and(retryable()),
        "retry aggregate " + aggregateType + "/" + aggregateId);
  }

  /** Retries every dead or backing-off event of one event type; returns how many. */
  public int retryEventType(String eventType) {
    requireNonNull(eventType, "eventType must not be null");
    return resetWhere(
        OUTBOX_EVENTS.EVENT_TYPE.eq(eventType).and(retryable()), "retry event type " + eventType);
  }

  /**
   * Deletes one dead letter for good. Under {@link DeadLetterPolicy#HOLD_AGGREGATE} this releases
   * the events queued behind it.
   *
   * @return whether a dead letter with that id existed
   */
  public boolean discard(UUID eventId) {
    requireNonNull(eventId, "eventId must not be null");
    int deleted =
        write(
            "discard dead letter " + eventId,
            tx ->
                tx.deleteFrom(OUTBOX_EVENTS)
                    .where(OUTBOX_EVENTS.ID.eq(eventId))
                    .and(OUTBOX_EVENTS.DEAD_AT.isNotNull())
                    .and(OUTBOX_EVENTS.PROCESSED_AT.isNull())
                    .execute());
    if (deleted > 0) {
      LOG.info("pgoutbox-admin[{}] - Discarded dead letter {}", schema, eventId);
    }
    return deleted > 0;
  }

  /**
   * Deletes processed events older than {@code olderThan}, {@code batchSize} rows per statement
   * (each its own transaction, so locks and WAL bursts stay small), until none is left. Nothing to
   * do under {@link Completion#DELETE} (the {@link WalRelay}'s default), which keeps no processed
   * rows.
   *
   * @return rows deleted
   */
  public long purgeProcessed(Duration olderThan, int batchSize) {
    Retention.requirePurgeArguments(olderThan, batchSize);
    long total = 0;
    while (true) {
      int deleted =
          write(
              "purge processed events",
              tx ->
                  tx.deleteFrom(OUTBOX_EVENTS)
                      .where(
                          OUTBOX_EVENTS.ID.in(
                              DSL.select(OUTBOX_EVENTS.ID)
                                  .from(OUTBOX_EVENTS)
                                  .where(
                                      OUTBOX_EVENTS.PROCESSED_AT.lt(
                                          Sql.clockTimestampPlus(olderThan.negated())))
                                  .limit(batchSize)))
                      .execute());
      total += deleted;
      if (deleted < batchSize) {
        return total;
      }
    }
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
    requireNonNull(query, "query must not be null");
    var d = OUTBOX_DEAD_LETTERS;
    Condition where = DSL.trueCondition();
    if (query.eventType() != null) {
      where = where.and(d.EVENT_TYPE.eq(query.eventType()));
    }
    if (query.aggregateType() != null) {
      where =
          where
              .and(d.AGGREGATE_TYPE.eq(query.aggregateType()))
              .and(d.AGGREGATE_ID.eq(query.aggregateId()));
    }
    if (query.since() != null) {
      where = where.and(d.DEAD_AT.ge(query.since().atOffset(ZoneOffset.UTC)));
    }
    if (query.errorContains() != null) {
      where = where.and(d.LAST_ERROR.containsIgnoreCase(query.errorContains()));
    }
    if (query.after() > 0) {
      where =
          where.and(
              query.newestFirst() ? d.POSITION.lt(query.after()) : d.POSITION.gt(query.after()));
    }
    Condition filter = where;
    return wrap(
        "list dead letters",
        () ->
            dsl.select(
                    d.ID,
                    d.POSITION,
                    d.AGGREGATE_TYPE,
                    d.AGGREGATE_ID,
                    d.EVENT_TYPE,
                    d.HEADERS,
                    d.ATTEMPTS,
                    d.LAST_ERROR,
                    d.CREATED_AT,
                    d.DEAD_AT)
                .from(d)
                .where(filter)
                .orderBy(query.newestFirst() ? d.POSITION.desc() : d.POSITION.asc())
                .limit(query.limit())
                .fetch(
                    r ->
                        new StoredEvent(
                            r.value1(),
                            r.value2(),
                            r.value3(),
                            r.value4(),
                            r.value5(),
                            r.value6() == null ? "{}" : r.value6().data(),
                            null,
                            r.value7(),
                            r.value8(),
                            r.value9().toInstant(),
                            null,
                            r.value10().toInstant(),
                            null,
                            false,
                            List.of())));
  }

  /**
   * One event, in whatever state: its headers, attempts, last error and times; its payload only
   * when {@code withPayload}. Empty if no event has this id (never written, discarded, or purged).
   */
  public Optional<StoredEvent> event(UUID eventId, boolean withPayload) {
    requireNonNull(eventId, "eventId must not be null");
    return wrap(
        "read event " + eventId,
        () ->
            Optional.ofNullable(
                    dsl.select(storedEventFields(withPayload))
                        .from(OUTBOX_EVENTS)
                        .where(OUTBOX_EVENTS.ID.eq(eventId))
                        .fetchOne())
                .map(r -> storedEvent(r, withPayload)));
  }

  /**
   * The events {@link #retryEvents} would reset among those {@code selector} names: unpublished
   * ones that are dead or backing off, in position order, at most {@code limit}, payloads left out.
   * A merely pending event is never touched by a retry.
   *
   * @param limit 1 to {@value #MAX_SELECTION}
   */
  public List<StoredEvent> retryable(EventSelector selector, int limit) {
    return select("list the events to retry", selected(selector).and(retryableCondition()), limit);
  }

  /**
   * The dead letters {@link #discardEvents} would delete among those {@code selector} names, in
   * position order, at most {@code limit}, payloads left out.
   *
   * @param limit 1 to {@value #MAX_SELECTION}
   */
  public List<StoredEvent> discardable(EventSelector selector, int limit) {
    return select(
        "list the dead letters to discard", selected(selector).and(discardableCondition()), limit);
  }

  /**
   * Retries exactly these events, those of them still dead or backing off (as {@link #retryable}
   * listed them; an event published or reset meanwhile is left alone), in one transaction. See
   * {@link #retry(UUID)} for what a retry promises.
   *
   * @return how many were reset
   */
  public int retryEvents(Collection<UUID> eventIds) {
    requireNonNull(eventIds, "eventIds must not be null");
    requireSelectionSize(eventIds.size());
    if (eventIds.isEmpty()) {
      return 0;
    }
    int updated =
        write(
            "retry " + eventIds.size() + " events",
            tx ->
                tx.update(OUTBOX_EVENTS)
                    .set(OUTBOX_EVENTS.ATTEMPTS, 0)
                    .set(OUTBOX_EVENTS.RETRY_AFTER, (OffsetDateTime) null)
                    .set(OUTBOX_EVENTS.DEAD_AT, (OffsetDateTime) null)
                    .where(OUTBOX_EVENTS.ID.in(eventIds))
                    .and(retryableCondition())
                    .execute());
    LOG.info(
        "pgoutbox-admin[{}] - Retried {} of {} selected events", schema, updated, eventIds.size());
    return updated;
  }

  /**
   * Deletes exactly these dead letters, those of them still dead and unpublished (as {@link
   * #discardable} listed them), in one transaction. See {@link #discard(UUID)}.
   *
   * @return how many were deleted
   */
  public int discardEvents(Collection<UUID> eventIds) {
    requireNonNull(eventIds, "eventIds must not be null");
    requireSelectionSize(eventIds.size());
    if (eventIds.isEmpty()) {
      return 0;
    }
    int deleted =
        write(
            "discard " + eventIds.size() + " dead letters",
            tx ->
                tx.deleteFrom(OUTBOX_EVENTS)
                    .where(OUTBOX_EVENTS.ID.in(eventIds))
                    .and(discardableCondition())
                    .execute());
    LOG.info(
        "pgoutbox-admin[{}] - Discarded {} of {} selected dead letters",
        schema,
        deleted,
        eventIds.size());
    return deleted;
  }

  /**
   * The event at the head of each blocked aggregate (the aggregates {@link #blockedAggregates}
   * counts: its oldest unprocessed event is dead or backing off), oldest first, at most {@code
   * limit}, payloads left out. {@link StoredEvent#state()} says why it waits.
   *
   * @param limit 1 to {@value #MAX_PAGE}
   */
  public List<StoredEvent> blockedAggregateHeads(int limit) {
    if (limit < 1 || limit > MAX_PAGE) {
      throw new IllegalArgumentException(
          "limit must be between 1 and " + MAX_PAGE + ", was " + limit);
    }
    OutboxEvents e = OUTBOX_EVENTS.as("e");
    return wrap(
        "list the blocked aggregates",
        () ->
            dsl.select(storedEventFields(e, false))
                .from(e)
                .where(blockedHead(e))
                .orderBy(e.POSITION)
                .limit(limit)
                .fetch(r -> storedEvent(r, false)));
  }

  /**
   * The relay instances registered on this outbox ({@code outbox_relays}), live or not, oldest
   * first. An instance whose heartbeat is older than 30 s is not {@link RelayInstance#alive()}: it
   * crashed or lost the database (one that stops cleanly deletes its row).
   */
  public List<RelayInstance> relays() {
    var r = OUTBOX_RELAYS;
    Field<Long> age = DSL.field(Sql.ageMillis("{0}"), Long.class, r.HEARTBEAT_AT);
    return wrap(
        "read the relay registry",
        () ->
            dsl.select(
                    r.INSTANCE_ID,
                    r.RELAY_NAME,
                    r.SOURCE,
                    r.ORDERING,
                    r.DEAD_LETTER_POLICY,
                    r.STARTED_AT,
                    r.HEARTBEAT_AT,
                    age)
                .from(r)
                .orderBy(r.STARTED_AT, r.INSTANCE_ID)
                .fetch(
                    row -> {
                      Duration heartbeatAge = Duration.ofMillis(row.value8());
                      return new RelayInstance(
                          row.value1(),
                          row.value2(),
                          row.value3(),
                          row.value4(),
                          row.value5(),
                          row.value6().toInstant(),
                          row.value7().toInstant(),
                          heartbeatAge,
                          heartbeatAge.compareTo(FleetRegistry.EXPIRES_AFTER) <= 0);
                    }));
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
    OutboxStats stats = stats();
    List<RelayInstance> relays = relays();
    LinkedHashSet<String> slotNames = new LinkedHashSet<>();
    for (RelayInstance relay : relays) {
      if (relay.walSlot() != null) {
        slotNames.add(relay.walSlot());
      }
    }
    slotNames.add(WalRelay.defaultName(schema));
    List<WalSlotStats> slots = new ArrayList<>();
    List<String> missingSlots = new ArrayList<>();
    for (String slotName : slotNames) {
      Optional<WalSlotStats> slot = walSlot(slotName);
      if (slot.isPresent()) {
        slots.add(slot.get());
      } else if (relays.stream().anyMatch(r -> r.alive() && slotName.equals(r.walSlot()))) {
        missingSlots.add(slotName);
      }
    }
    List<StoredEvent> heads =
        stats.blockedAggregates() == 0 ? List.of() : blockedAggregateHeads(STATUS_BLOCKED_HEADS);
    List<String> problems = new ArrayList<>();
    if (stats.deadLetters() > 0) {
      problems.add(
          stats.deadLetters()
              + " dead letter(s): their aggregates may be held back; retry or discard them");
    }
    if (relays.stream().noneMatch(RelayInstance::alive)) {
      problems.add(
          "no relay is alive (none registered with a heartbeat in the last "
              + FleetRegistry.EXPIRES_AFTER.toSeconds()
              + " s): nothing publishes");
    }
    for (RelayInstance relay : relays) {
      if (!relay.alive()) {
        problems.add(
            "relay '"
                + relay.relayName()
                + "' (instance "
                + relay.instanceId()
                + ") last beat "
                + relay.heartbeatAge().toSeconds()
                + " s ago: it crashed or lost the database");
      }
    }
    if (stats.oldestPendingAge().compareTo(maxPendingAge) > 0) {
      problems.add(
          "the oldest pending event is "
              + stats.oldestPendingAge().toSeconds()
              + " s old, above "
              + maxPendingAge.toSeconds()
              + " s: the relays fall behind or are held back");
    }
    if (stats.oldestTransactionAge().compareTo(maxTransactionAge) > 0) {
      problems.add(
          "a transaction has been open for "
              + stats.oldestTransactionAge().toSeconds()
              + " s, above "
              + maxTransactionAge.toSeconds()
              + " s: it holds back vacuum of outbox_events");
    }
    for (WalSlotStats slot : slots) {
      if (slot.lost()) {
        problems.add(
            "replication slot "
                + slot.slotName()
                + " is lost (wal_status=lost): the WAL relay cannot stream; see docs/wal-relay.md");
      } else if (!slot.active()) {
        problems.add(
            "replication slot "
                + slot.slotName()
                + " has no reader: PostgreSQL keeps its WAL ("
                + slot.lagBytes()
                + " bytes behind)");
      }
    }
    for (String slotName : missingSlots) {
      problems.add(
          "replication slot "
              + slotName
              + ", which live WAL relays read, does not exist (dropped by hand or after"
              + " publication drift, or lost in a fail-over to a standby; or a first start is"
              + " creating it): the WAL relays publish from the table until every instance is"
              + " restarted; see docs/wal-relay.md");
    }
    return new OutboxStatus(stats, relays, slots, heads, problems);
  }

  /**
   * Checks that the outbox exists in this schema and that the role may do what an operator asks:
   * read it (always), reset and delete events ({@code writes}). Answers from the catalogs, before
   * any statement could fail half way.
   *
   * @throws OutboxException naming the missing schema, table or privilege and the role
   */
  public void checkAccess(boolean writes) {
    wrap(
        "check the role's access to the outbox",
        () -> {
          Record row =
              dsl.resultQuery(
                      "select current_user::text,"
                          + " exists (select 1 from pg_catalog.pg_namespace where nspname = {0}),"
                          + " exists (select 1 from pg_catalog.pg_class c join pg_catalog.pg_namespace n"
                          + " on n.oid = c.relnamespace where n.nspname = {0} and c.relname = 'outbox_events')",
                      DSL.val(schema))
                  .fetchOne();
          String role = row.get(0, String.class);
          if (!row.get(1, Boolean.class)) {
            throw new OutboxException(
                "schema '" + schema + "' does not exist in this database: check the schema name");
          }
          if (!row.get(2, Boolean.class)) {
            throw new OutboxException(
                "schema '"
                    + schema
                    + "' holds no outbox (no table "
                    + schema
                    + ".outbox_events): check the schema name, or run OutboxSchema.migrate");
          }
          List<String> missing = new ArrayList<>();
          String q = schema + ".";
          requirePrivilege(
              missing, "has_schema_privilege({0}, 'USAGE')", schema, "USAGE on schema " + schema);
          if (missing.isEmpty()) {
            requirePrivilege(
                missing,
                "has_table_privilege({0}, 'SELECT')",
                q + "outbox_events",
                "SELECT on " + q + "outbox_events");
            requirePrivilege(
                missing,
                "has_table_privilege({0}, 'SELECT')",
                q + "outbox_dead_letters",
                "SELECT on " + q + "outbox_dead_letters");
            requirePrivilege(
                missing,
                "has_table_privilege({0}, 'SELECT')",
                q + "outbox_relays",
                "SELECT on " + q + "outbox_relays");
            if (writes) {
              for (String column : List.of("attempts", "retry_after", "dead_at")) {
                requirePrivilege(
                    missing,
                    "has_column_privilege({0}, '" + column + "', 'UPDATE')",
                    q + "outbox_events",
                    "UPDATE (" + column + ") on " + q + "outbox_events");
              }
              requirePrivilege(
                  missing,
                  "has_table_privilege({0}, 'DELETE')",
                  q + "outbox_events",
                  "DELETE on " + q + "outbox_events");
            }
          }
          if (!missing.isEmpty()) {
            throw new OutboxException(
                "role '"
                    + role
                    + "' lacks "
                    + String.join(", ", missing)
                    + ": grant it the relay role's privileges (db/pgoutbox/roles/grants.sql,"
                    + " OutboxRoles.grant)");
          }
          return null;
        });
  }

  private void requirePrivilege(List<String> missing, String check, String object, String what) {
    Boolean granted =
        dsl.resultQuery("select pg_catalog." + check, DSL.val(object)).fetchOne(0, Boolean.class);
    if (!Boolean.TRUE.equals(granted)) {
      missing.add(what);
    }
  }

  private List<StoredEvent> select(String what, Condition condition, int limit) {
    if (limit < 1 || limit > MAX_SELECTION) {
      throw new IllegalArgumentException(
          "limit must be between 1 and " + MAX_SELECTION + ", was " + limit);
    }
    return wrap(
        what,
        () ->
            dsl.select(storedEventFields(false))
                .from(OUTBOX_EVENTS)
                .where(condition)
                .orderBy(OUTBOX_EVENTS.POSITION)
                .limit(limit)
                .fetch(r -> storedEvent(r, false)));
  }

  private static void requireSelectionSize(int size) {
    if (size > MAX_SELECTION) {
      throw new IllegalArgumentException(
          "eventIds must hold at most " + MAX_SELECTION + " ids, was " + size);
    }
  }

  private static void requirePositive(Duration value, String name) {
    requireNonNull(value, name + " must not be null");
    if (value.isNegative() || value.isZero()) {
      throw new IllegalArgumentException(name + " must be positive, was " + value);
    }
  }

  /** What a retry resets: an unpublished event that is dead or backing off. */
  private static Condition retryableCondition() {
    return OUTBOX_EVENTS
        .PROCESSED_AT
        .isNull()
        .and(OUTBOX_EVENTS.DEAD_AT.isNotNull().or(OUTBOX_EVENTS.RETRY_AFTER.isNotNull()));
  }

  /** What a discard deletes: a dead letter (dead, unpublished). */
  private static Condition discardableCondition() {
    return OUTBOX_EVENTS.DEAD_AT.isNotNull().and(OUTBOX_EVENTS.PROCESSED_AT.isNull());
  }

  private static Condition selected(EventSelector selector) {
    requireNonNull(selector, "selector must not be null");
    if (selector.id() != null) {
      return OUTBOX_EVENTS.ID.eq(selector.id());
    }
    if (selector.eventType() != null) {
      return OUTBOX_EVENTS.EVENT_TYPE.eq(selector.eventType());
    }
    return OUTBOX_EVENTS
        .AGGREGATE_TYPE
        .eq(selector.aggregateType())
        .and(OUTBOX_EVENTS.AGGREGATE_ID.eq(selector.aggregateId()));
  }

  /** The head of a blocked aggregate: {@link #blockedAggregates} counts these rows. */
  private static Condition blockedHead(OutboxEvents e) {
    OutboxEvents p = OUTBOX_EVENTS.as("p");
    return e.PROCESSED_AT
        .isNull()
        .and(e.DEAD_AT.isNotNull().or(e.RETRY_AFTER.gt(DSL.currentOffsetDateTime())))
        .andNotExists(
            selectOne()
                .from(p)
                .where(p.PROCESSED_AT.isNull())
                .and(p.AGGREGATE_TYPE.eq(e.AGGREGATE_TYPE))
                .and(p.AGGREGATE_ID.eq(e.AGGREGATE_ID))
                .and(p.POSITION.lt(e.POSITION)));
  }

  private static List<Field<?>> storedEventFields(boolean withPayload) {
    return storedEventFields(OUTBOX_EVENTS, withPayload);
  }

  private static List<Field<?>> storedEventFields(OutboxEvents t, boolean withPayload) {
    return List.of(
        t.ID,
        t.POSITION,
        t.AGGREGATE_TYPE,
        t.AGGREGATE_ID,
        t.EVENT_TYPE,
        t.HEADERS,
        withPayload ? t.PAYLOAD : DSL.inline((JSONB) null).as(t.PAYLOAD.getName()),
        t.ATTEMPTS,
        t.LAST_ERROR,
        t.CREATED_AT,
        t.RETRY_AFTER,
        t.DEAD_AT,
        t.PROCESSED_AT,
        t.PARKED,
        t.ERROR_HISTORY);
  }

  private static StoredEvent storedEvent(Record r, boolean withPayload) {
    JSONB headers = r.get(5, JSONB.class);
    JSONB payload = withPayload ? r.get(6, JSONB.class) : null;
    Boolean parked = r.get(13, Boolean.class);
    return new StoredEvent(
        r.get(0, UUID.class),
        r.get(1, Long.class),
        r.get(2, String.class),
        r.get(3, String.class),
        r.get(4, String.class),
        headers == null ? "{}" : headers.data(),
        payload == null ? null : payload.data(),
        r.get(7, Integer.class),
        r.get(8, String.class),
        r.get(9, OffsetDateTime.class).toInstant(),
        instant(r.get(10, OffsetDateTime.class)),
        instant(r.get(11, OffsetDateTime.class)),
        instant(r.get(12, OffsetDateTime.class)),
        Boolean.TRUE.equals(parked),
        failures(r.get(14, JSONB.class)));
  }

  /** The failed attempts in an {@code error_history} (schema version 13), oldest first. */
  private static List<StoredEvent.FailedAttempt> failures(@Nullable JSONB history) {
    if (history == null) {
      return List.of();
    }
    try {
      List<StoredEvent.FailedAttempt> failures = new ArrayList<>();
      for (JsonNode entry : HISTORY_READER.readTree(history.data())) {
        failures.add(
            new StoredEvent.FailedAttempt(
                entry.path("attempt").asInt(),
                OffsetDateTime.parse(entry.path("at").asText()).toInstant(),
                entry.path("error").asText(""),
                entry.path("dead").asBoolean()));
      }
      return List.copyOf(failures);
    } catch (IOException | RuntimeException e) {
      // A history written by hand that does not read is shown as one entry saying so.
      return List.of(
          new StoredEvent.FailedAttempt(
              0, Instant.EPOCH, "error_history unreadable: " + e.getMessage(), false));
    }
  }

  private static @Nullable Instant instant(@Nullable OffsetDateTime time) {
    return time == null ? null : time.toInstant();
  }

  /** The schema that holds the outbox. */
  public String schema() {
    return schema;
  }

  @Override
  public String toString() {
    return "OutboxAdmin[schema=" + schema + "]";
  }

  /** What a retry applies to: an event that is dead or backing off, the one rule of all three. */
  private static Condition retryable() {
    return OUTBOX_EVENTS.DEAD_AT.isNotNull().or(OUTBOX_EVENTS.RETRY_AFTER.isNotNull());
  }

  private int resetWhere(Condition condition, String what) {
    return write(
        what,
        tx ->
            tx.update(OUTBOX_EVENTS)
                .set(OUTBOX_EVENTS.ATTEMPTS, 0)
                .set(OUTBOX_EVENTS.RETRY_AFTER, (OffsetDateTime) null)
                .set(OUTBOX_EVENTS.DEAD_AT, (OffsetDateTime) null)
                .where(OUTBOX_EVENTS.PROCESSED_AT.isNull())
                .and(condition)
                .execute());
  }

  /**
   * Runs one write in a transaction of its own and commits it: on a pool whose connections come
   * with auto-commit off, a bare statement would be rolled back when the connection goes back,
   * after reporting success.
   */
  private <T> T write(String what, java.util.function.Function<DSLContext, T> statement) {
    return wrap(what, () -> dsl.transactionResult(tx -> statement.apply(tx.dsl())));
  }

  private static <T> T wrap(String what, java.util.function.Supplier<T> action) {
    try {
      return action.get();
    } catch (DataAccessException e) {
      throw new OutboxException("Could not " + what + ": " + e.getMessage(), e);
    }
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

package dev.pgoutbox.relay;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_DEAD_LETTERS;
import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static java.util.Objects.requireNonNull;
import static org.jooq.impl.DSL.selectOne;

import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.core.internal.Retention;
import dev.pgoutbox.core.internal.SearchPath;
import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.db.jooq.tables.OutboxEvents;
import dev.pgoutbox.relay.internal.Sql;
import dev.pgoutbox.relay.internal.WalSlot;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import javax.sql.DataSource;
import org.jooq.Condition;
import org.jooq.DSLContext;
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
 */
public final class OutboxAdmin {

  private static final Logger LOG = LoggerFactory.getLogger(OutboxAdmin.class);

  /** Largest page of {@link #deadLetters}. */
  public static final int MAX_PAGE = 1_000;

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
    OutboxEvents p = OUTBOX_EVENTS.as("p");
    return dsl.selectCount()
        .from(e)
        .where(e.PROCESSED_AT.isNull())
        .and(e.DEAD_AT.isNotNull().or(e.RETRY_AFTER.gt(DSL.currentOffsetDateTime())))
        .andNotExists(
            selectOne()
                .from(p)
                .where(p.PROCESSED_AT.isNull())
                .and(p.AGGREGATE_TYPE.eq(e.AGGREGATE_TYPE))
                .and(p.AGGREGATE_ID.eq(e.AGGREGATE_ID))
                .and(p.POSITION.lt(e.POSITION)));
  }

  /**
   * The state of a WAL relay's replication slot ({@link WalRelay#slotName()}) reading this outbox:
   * its lag in bytes and in time ({@link WalSlotStats#lagTime()}), whether a reader streams it, its
   * {@code wal_status}; empty when no such slot exists in this database. Works from any process,
   * with or without a relay running.
   */
  public java.util.Optional<WalSlotStats> walSlot(String slotName) {
    requireNonNull(slotName, "slotName must not be null");
    return wrap(
        "read pg_replication_slots",
        () ->
            java.util.Optional.ofNullable(
                dsl.connectionResult(c -> WalSlot.read(c, schema, slotName))));
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
   * (each its own transaction, so locks and WAL bursts stay small), until none is left.
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

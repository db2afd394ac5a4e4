package dev.pgoutbox.relay.internal;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_DEAD_LETTERS;
import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static org.jooq.impl.DSL.selectOne;

import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.core.internal.SearchPath;
import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.db.jooq.tables.OutboxEvents;
import dev.pgoutbox.relay.OutboxStats;
import dev.pgoutbox.relay.OutboxTableStats;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.Record;
import org.jooq.Record1;
import org.jooq.ResultQuery;
import org.jooq.SQLDialect;
import org.jooq.exception.DataAccessException;
import org.jooq.impl.DSL;

/**
 * The one reader of an outbox's {@link OutboxStats}: the table relay and the WAL relay read them
 * for their listener's {@code onStats}, and {@code OutboxAdmin} answers its {@code stats()} and
 * each of its parts from the same statements. Thread-safe.
 */
public final class StatsReader {

  /** The indexes of pending rows the claim reads, as schema V1 names them. */
  public static final List<String> PENDING_INDEXES =
      List.of("outbox_events_pending_idx", "outbox_events_pending_aggregate_idx");

  private final DSLContext dsl;
  private final String schema;

  /** Reads through {@code dsl}, whose statements must run under the fixed search_path. */
  public StatsReader(DSLContext dsl, String schema) {
    this.dsl = dsl;
    this.schema = schema;
  }

  /** A reader on {@code dataSource}, every statement under the fixed search_path (SearchPath). */
  public static StatsReader on(DataSource dataSource, String schema) {
    return new StatsReader(
        DSL.using(
            SearchPath.pinned(dataSource), SQLDialect.POSTGRES, OutboxSchema.jooqSettings(schema)),
        schema);
  }

  /** All of it: pending, lag, dead letters, blocked aggregates, oldest transaction, table. */
  public OutboxStats stats() {
    return read(
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
    return read(
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
    return read(
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

  /** Dead events not yet retried or discarded. */
  public long deadLetterCount() {
    return read("count dead letters", () -> deadLetterCountQuery().fetchOne(0, Long.class));
  }

  /** The statement behind {@link #deadLetterCount}, for the test of its plan. */
  public ResultQuery<Record1<Integer>> deadLetterCountQuery() {
    return dsl.selectCount().from(OUTBOX_DEAD_LETTERS);
  }

  /** Aggregates whose oldest unprocessed event is dead or backing off. */
  public long blockedAggregates() {
    return read("count blocked aggregates", () -> blockedAggregatesQuery().fetchOne(0, Long.class));
  }

  /** The statement behind {@link #blockedAggregates}, for the test of its plan. */
  public ResultQuery<Record1<Integer>> blockedAggregatesQuery() {
    OutboxEvents e = OUTBOX_EVENTS.as("e");
    return dsl.selectCount().from(e).where(blockedHead(e));
  }

  /** The head of a blocked aggregate: {@link #blockedAggregates} counts these rows. */
  public static Condition blockedHead(OutboxEvents e) {
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

  /** Age of the oldest open transaction in this database, prepared ones included; zero if none. */
  public Duration oldestTransactionAge() {
    return read(
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
   * The table's statistics ({@code pg_stat_user_tables}); {@link OutboxTableStats#EMPTY} if none.
   */
  public OutboxTableStats tableStats() {
    return read(
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

  /** Runs {@code action}, reporting a database failure as "Could not {@code what}". */
  public static <T> T read(String what, Supplier<T> action) {
    try {
      return action.get();
    } catch (DataAccessException e) {
      throw new OutboxException("Could not " + what + ": " + e.getMessage(), e);
    }
  }
}

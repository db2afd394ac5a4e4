package dev.pgoutbox.relay;

import java.time.OffsetDateTime;
import java.util.List;
import org.jooq.DSLContext;
import org.jooq.Record;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link OutboxAdmin#tableStats()} and {@link OutboxAdmin#rebuildPendingIndexes()}: the table's
 * statistics, and the concurrent rebuild of the two indexes of pending rows the claim reads.
 */
final class PendingIndexes {

  private static final Logger LOG = LoggerFactory.getLogger(OutboxAdmin.class);

  /** The indexes of pending rows the claim reads, as schema V1 names them. */
  private static final List<String> NAMES =
      List.of("outbox_events_pending_idx", "outbox_events_pending_aggregate_idx");

  private final AdminDatabase db;

  PendingIndexes(AdminDatabase db) {
    this.db = db;
  }

  OutboxTableStats tableStats() {
    return db.read(
        "read pg_stat_user_tables",
        () -> {
          Record row =
              db.dsl
                  .resultQuery(
                      "select n_live_tup, n_dead_tup, autovacuum_count, last_autovacuum,"
                          + " pg_table_size(relid), pg_indexes_size(relid),"
                          + " (select coalesce(sum(pg_relation_size(i.indexrelid)), 0)"
                          + " from pg_index i join pg_class c on c.oid = i.indexrelid"
                          + " where i.indrelid = relid and c.relname in ({1}, {2}))"
                          + " from pg_stat_user_tables where schemaname = {0}"
                          + " and relname = 'outbox_events'",
                      DSL.val(db.schema), DSL.val(NAMES.get(0)), DSL.val(NAMES.get(1)))
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

  long rebuild() {
    long before = tableStats().pendingIndexBytes();
    db.read("rebuild the pending indexes", () -> db.dsl.connectionResult(this::rebuild));
    long after = tableStats().pendingIndexBytes();
    LOG.info(
        "pgoutbox-admin[{}] - Rebuilt the pending indexes: {} bytes before, {} after",
        db.schema,
        before,
        after);
    return Math.max(0, before - after);
  }

  /** Outside any transaction: a concurrent rebuild may not run in one. */
  private Void rebuild(java.sql.Connection connection) throws java.sql.SQLException {
    boolean autoCommit = connection.getAutoCommit();
    connection.setAutoCommit(true);
    try {
      DSLContext session = DSL.using(connection, SQLDialect.POSTGRES);
      // An earlier rebuild that failed half way left an invalid copy: drop it first.
      for (String leftover :
          session
              .resultQuery(
                  "select c.relname from pg_index i"
                      + " join pg_class c on c.oid = i.indexrelid"
                      + " join pg_class t on t.oid = i.indrelid"
                      + " join pg_namespace n on n.oid = t.relnamespace"
                      + " where n.nspname = {0} and t.relname = 'outbox_events'"
                      + " and not i.indisvalid and c.relname like {1}",
                  DSL.val(db.schema), DSL.val("outbox_events_pending%_ccnew%"))
              .fetch(0, String.class)) {
        session.execute("drop index concurrently if exists {0}", DSL.name(db.schema, leftover));
      }
      for (String index : NAMES) {
        session.execute("reindex index concurrently {0}", DSL.name(db.schema, index));
      }
      return null;
    } finally {
      connection.setAutoCommit(autoCommit);
    }
  }
}

package dev.pgoutbox.admin;

import dev.pgoutbox.relay.internal.StatsReader;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link OutboxAdmin#rebuildPendingIndexes()}: the concurrent rebuild of the two indexes of pending
 * rows the claim reads.
 */
final class PendingIndexes {

  private static final Logger LOG = LoggerFactory.getLogger(OutboxAdmin.class);

  private final AdminDatabase db;
  private final StatsReader stats;

  PendingIndexes(AdminDatabase db, StatsReader stats) {
    this.db = db;
    this.stats = stats;
  }

  long rebuild() {
    long before = stats.tableStats().pendingIndexBytes();
    db.read("rebuild the pending indexes", () -> db.dsl.connectionResult(this::rebuild));
    long after = stats.tableStats().pendingIndexBytes();
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
      for (String index : StatsReader.PENDING_INDEXES) {
        session.execute("reindex index concurrently {0}", DSL.name(db.schema, index));
      }
      return null;
    } finally {
      connection.setAutoCommit(autoCommit);
    }
  }
}

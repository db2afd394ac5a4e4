package dev.pgoutbox.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.DeadLetterPolicy;
import dev.pgoutbox.relay.Ordering;
import dev.pgoutbox.testing.TestSchema;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A full scan that reads the whole backlog is not repeated claim after claim, however often full
 * scans are due: the next waits {@link Claimer#FULL_SCAN_COST_FACTOR} times as long as the last
 * took. Here full scans are due at every claim (period 0) and fewer aggregates are pending than a
 * full scan asks for, so each one reads the whole backlog; before the budget, a relay whose full
 * scan took longer than the period ran nothing but full scans and fell further and further behind.
 */
class FullScanBudgetIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static final int BACKLOG = 20_000;
  private static final int BATCH = 100;
  private static final int CLAIMS = 12;

  @Test
  void backToBackClaimsReadTheBacklogOnlyOnceInAWhile() throws Exception {
    db.execute("truncate outbox_events");
    db.execute(
        "insert into outbox_events (aggregate_type, aggregate_id, event_type, payload)"
            + " select 'order', 'agg-' || (i % 2), 'order.step', '{}'::jsonb"
            + " from generate_series(1, "
            + BACKLOG
            + ") i");
    db.execute("analyze outbox_events");
    Claimer claimer =
        new Claimer(
            BATCH,
            Ordering.STRICT,
            DeadLetterPolicy.HOLD_AGGREGATE,
            db.schema(),
            Claimer.Tuning.DEFAULT.settle(0).fullScanEvery(0, Claimer.FULL_SCAN_COST_FACTOR));
    List<Long> rowsRead = new ArrayList<>();
    try (Connection connection = db.connect()) {
      connection.setAutoCommit(false);
      DSLContext tx =
          DSL.using(connection, SQLDialect.POSTGRES, OutboxSchema.jooqSettings(db.schema()));
      for (int claim = 1; claim <= CLAIMS; claim++) {
        Sql.configureClaimTransaction(tx, "full-scan-budget", Duration.ofSeconds(30), true);
        long before = rowsReadSoFar(connection);
        int claimed = claimer.claim(tx).size();
        // The first claim reads a few events per head, sized for heads it has not yet counted.
        assertThat(claimed).as("claim %d", claim).isEqualTo(claim == 1 ? claimed : BATCH);
        rowsRead.add(rowsReadSoFar(connection) - before);
        connection.rollback();
      }
    }
    long wholeBacklogReads = rowsRead.stream().filter(read -> read >= BACKLOG / 2).count();
    assertThat(wholeBacklogReads)
        .as("claims that read half the backlog or more: %s", rowsRead)
        .isBetween(1L, 3L);
  }

  private static long rowsReadSoFar(Connection connection) throws SQLException {
    try (Statement statement = connection.createStatement();
        ResultSet rs =
            statement.executeQuery(
                // Every schema's outbox_events: only this transaction's reads count, and it read
                // one of them (its claims fix the search_path, so no name resolves to the test's).
                "select coalesce(sum(seq_tup_read), 0) + coalesce(sum(idx_tup_fetch), 0)"
                    + " from pg_stat_xact_user_tables where relname = 'outbox_events'")) {
      rs.next();
      return rs.getLong(1);
    }
  }
}

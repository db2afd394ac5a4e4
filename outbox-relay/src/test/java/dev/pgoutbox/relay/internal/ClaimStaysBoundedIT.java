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
 * A claim reads rows in proportion to its batch, not to the backlog, on a table that was never
 * analysed and with the statement prepared and cached by the driver. Rows read are counted by
 * PostgreSQL for the claim's own session ({@code pg_stat_xact_user_tables}, before and after the
 * claim), so the check is deterministic.
 */
class ClaimStaysBoundedIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static final int BACKLOG = 20_000;
  private static final int BATCH = 100;

  @Test
  void aClaimOnANeverAnalysedTableReadsAboutItsBatchNotTheBacklog() throws Exception {
    db.execute("alter table outbox_events set (autovacuum_enabled = off)");
    db.execute("truncate outbox_events");
    // Two aggregates: far fewer heads than a claim first asks for, so a search that asks for more
    // heads than exist reads the whole backlog.
    db.execute(
        "insert into outbox_events (aggregate_type, aggregate_id, event_type, payload)"
            + " select 'order', 'agg-' || (i % 2), 'order.step', '{}'::jsonb"
            + " from generate_series(1, "
            + BACKLOG
            + ") i");
    assertThat(
            db.queryLong(
                "select count(*) from pg_stat_user_tables where relname = 'outbox_events'"
                    + " and schemaname = current_schema()"
                    + " and (last_analyze is not null or last_autoanalyze is not null)"))
        .as("the outbox was never analysed")
        .isZero();

    Claimer claimer =
        new Claimer(BATCH, Ordering.STRICT, DeadLetterPolicy.HOLD_AGGREGATE, db.schema());
    List<Long> rowsRead = new ArrayList<>();
    long started = System.nanoTime();
    try (Connection connection = db.connect()) {
      connection.setAutoCommit(false);
      DSLContext tx =
          DSL.using(connection, SQLDialect.POSTGRES, OutboxSchema.jooqSettings(db.schema()));
      // The driver prepares a statement server-side from its 5th run, and PostgreSQL may choose a
      // generic plan after 5 more: 15 claims run on every kind of plan.
      for (int claim = 1; claim <= 15; claim++) {
        Sql.configureClaimTransaction(tx, "claim-stays-bounded", Duration.ofSeconds(30), true);
        long before = rowsReadSoFar(connection);
        int claimed = claimer.claim(tx).size();
        // The first claim reads a few events per head, sized for heads it has not yet counted.
        assertThat(claimed).as("claim %d", claim).isEqualTo(claim == 1 ? claimed : BATCH);
        rowsRead.add(rowsReadSoFar(connection) - before);
        connection.rollback();
      }
    }

    long seconds = Duration.ofNanos(System.nanoTime() - started).toSeconds();
    // The first claim learns how many heads exist (it reads the backlog once), and a full scan,
    // once a second, looks for heads beyond them; every other claim reads the heads, the runs
    // behind them and the rows it locks: a few batches' worth, whatever the backlog.
    long heavy = rowsRead.stream().skip(1).filter(read -> read >= 10L * BATCH).count();
    assertThat(heavy)
        .as("claims reading more than %d rows after %d s: %s", 10 * BATCH, seconds, rowsRead)
        .isLessThanOrEqualTo(seconds + 1);
  }

  /**
   * The rows each of {@code claims} claims read, each in a claim transaction of its own rolled back
   * after it, so every claim finds the same rows pending (and fails if it claims none).
   */
  static List<Long> rowsReadByClaims(TestSchema db, Claimer claimer, int claims)
      throws SQLException {
    try (Connection connection = db.connect()) {
      connection.setAutoCommit(false);
      DSLContext tx =
          DSL.using(connection, SQLDialect.POSTGRES, OutboxSchema.jooqSettings(db.schema()));
      List<Long> rowsRead = new ArrayList<>();
      for (int claim = 1; claim <= claims; claim++) {
        Sql.configureClaimTransaction(tx, "claim-rows-read", Duration.ofSeconds(30), true);
        long before = rowsReadSoFar(connection);
        assertThat(claimer.claim(tx)).as("claim %d", claim).isNotEmpty();
        rowsRead.add(rowsReadSoFar(connection) - before);
        connection.rollback();
      }
      return rowsRead;
    }
  }

  /** Rows of the outbox this session read since its statistics were last reported. */
  static long rowsReadSoFar(Connection connection) throws SQLException {
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

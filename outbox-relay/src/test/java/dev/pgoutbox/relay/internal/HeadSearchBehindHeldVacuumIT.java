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
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * While a transaction holds vacuum back, every event a relay publishes leaves its entry in the
 * pending indexes, and nothing can remove it. A strict claim looks for heads in position order, and
 * in a backlog most rows it looks at are not heads: it must tell them apart without stepping over
 * their aggregates' dead entries, or each claim costs the published history of every aggregate it
 * looks at (claims took 100-500 ms in the soak's held window). Index entries read are counted by
 * PostgreSQL for the claim's own transaction ({@code pg_stat_get_xact_tuples_returned} of each
 * index), so the check does not depend on the machine's speed.
 */
class HeadSearchBehindHeldVacuumIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static final int HOT_AGGREGATES = 10;
  private static final int PUBLISHED_EACH = 300;
  private static final int HOT_PENDING_EACH = 100;
  private static final int COLD_AGGREGATES = 90;
  private static final int BATCH = 100;

  @Test
  void rowsThatAreNotHeadsAreToldApartWithoutSteppingOverTheirAggregatesDeadEntries()
      throws Exception {
    db.execute("alter table outbox_events set (autovacuum_enabled = off)");
    db.execute("truncate outbox_events");
    try (Connection holder = db.connect()) {
      // The held horizon: a snapshot older than every row below.
      holder.setAutoCommit(false);
      try (Statement statement = holder.createStatement()) {
        statement.execute("set transaction isolation level repeatable read");
        statement.executeQuery("select 1").close();
      }

      // Each hot aggregate's published history: dead entries before its first pending row.
      db.execute(
          "insert into outbox_events (aggregate_type, aggregate_id, event_type, payload)"
              + " select 'order', 'hot-' || a, 'order.step', '{}'::jsonb"
              + " from generate_series(1, "
              + PUBLISHED_EACH
              + ") e, generate_series(1, "
              + HOT_AGGREGATES
              + ") a order by e, a");
      db.execute("update outbox_events set processed_at = now()");
      // The backlog: the hot aggregates' runs first (their heads, then rows that are not heads),
      // then the cold aggregates' heads behind them.
      db.execute(
          "insert into outbox_events (aggregate_type, aggregate_id, event_type, payload)"
              + " select 'order', 'hot-' || a, 'order.step', '{}'::jsonb"
              + " from generate_series(1, "
              + HOT_PENDING_EACH
              + ") e, generate_series(1, "
              + HOT_AGGREGATES
              + ") a order by e, a");
      db.execute(
          "insert into outbox_events (aggregate_type, aggregate_id, event_type, payload)"
              + " select 'order', 'cold-' || a, 'order.step', '{}'::jsonb"
              + " from generate_series(1, "
              + COLD_AGGREGATES
              + ") a");

      Claimer claimer =
          new Claimer(BATCH, Ordering.STRICT, DeadLetterPolicy.HOLD_AGGREGATE, db.schema());
      try (Connection connection = db.connect()) {
        connection.setAutoCommit(false);
        DSLContext tx =
            DSL.using(connection, SQLDialect.POSTGRES, OutboxSchema.jooqSettings(db.schema()));
        Sql.configureClaimTransaction(tx, "head-search", Duration.ofSeconds(30), true);
        long before = indexEntriesReadSoFar(connection);
        List<ClaimedRow> claimed = claimer.claim(tx);
        long read = indexEntriesReadSoFar(connection) - before;
        Map<String, Long> lowestPending = lowestPendingPositions(connection);
        connection.rollback();

        // The first claim asks for 40 heads: the 10 hot ones, then past the 990 rows behind
        // them that are not heads, 30 cold ones.
        assertThat(claimed).as("claimed").isNotEmpty();
        assertThat(claimed.stream().map(ClaimedRow::aggregateId).filter(a -> a.startsWith("cold")))
            .as("cold heads found behind the hot aggregates' backlog")
            .isNotEmpty();
        Map<String, Long> firstClaimed = new HashMap<>();
        for (ClaimedRow row : claimed) {
          firstClaimed.merge(row.aggregateId(), row.position(), Math::min);
        }
        firstClaimed.forEach(
            (aggregate, position) ->
                assertThat(position)
                    .as("%s is claimed from its first pending row on", aggregate)
                    .isEqualTo(lowestPending.get(aggregate)));

        // Stepping over the dead entries for each row that is not a head reads about 990 x 300;
        // telling it apart by its predecessor reads one entry each. Heads step over theirs once.
        int notHeads = HOT_AGGREGATES * (HOT_PENDING_EACH - 1);
        long headsWalk = (long) HOT_AGGREGATES * PUBLISHED_EACH;
        assertThat(read)
            .as("index entries read by one claim past %d rows that are not heads", notHeads)
            .isLessThan(10L * notHeads + 2 * headsWalk);
      }
      holder.rollback();
    } finally {
      db.execute("alter table outbox_events reset (autovacuum_enabled)");
    }
  }

  /**
   * A run shorter than the claim reads per aggregate must end at its aggregate's last entry: read
   * on, it steps over the next aggregate's dead entries, for every head.
   */
  @Test
  void aShortRunStopsAtItsAggregatesEndNotAtTheNextAggregatesDeadEntries() throws Exception {
    int aggregates = 100;
    db.execute("alter table outbox_events set (autovacuum_enabled = off)");
    db.execute("truncate outbox_events");
    try (Connection holder = db.connect()) {
      holder.setAutoCommit(false);
      try (Statement statement = holder.createStatement()) {
        statement.execute("set transaction isolation level repeatable read");
        statement.executeQuery("select 1").close();
      }
      // Every aggregate: its published history, then one pending event (a run of one).
      db.execute(
          "insert into outbox_events (aggregate_type, aggregate_id, event_type, payload)"
              + " select 'order', 'agg-' || lpad(a::text, 3, '0'), 'order.step', '{}'::jsonb"
              + " from generate_series(1, "
              + PUBLISHED_EACH
              + ") e, generate_series(1, "
              + aggregates
              + ") a order by e, a");
      db.execute("update outbox_events set processed_at = now()");
      db.execute(
          "insert into outbox_events (aggregate_type, aggregate_id, event_type, payload)"
              + " select 'order', 'agg-' || lpad(a::text, 3, '0'), 'order.step', '{}'::jsonb"
              + " from generate_series(1, "
              + aggregates
              + ") a");

      Claimer claimer =
          new Claimer(BATCH, Ordering.STRICT, DeadLetterPolicy.HOLD_AGGREGATE, db.schema());
      try (Connection connection = db.connect()) {
        connection.setAutoCommit(false);
        DSLContext tx =
            DSL.using(connection, SQLDialect.POSTGRES, OutboxSchema.jooqSettings(db.schema()));
        Sql.configureClaimTransaction(tx, "short-runs", Duration.ofSeconds(30), true);
        long before = aggregateIndexEntriesReadSoFar(connection);
        List<ClaimedRow> claimed = claimer.claim(tx);
        long read = aggregateIndexEntriesReadSoFar(connection) - before;
        connection.rollback();

        // The first claim asks for 40 heads and reads runs behind them (fewer heads than its
        // batch). Each head steps over its own aggregate's published entries once, to know it is
        // a head; its run must not step over the next aggregate's as well.
        assertThat(claimed).as("claimed").hasSizeGreaterThan(1);
        long ownWalk = (long) claimed.size() * (PUBLISHED_EACH + 2);
        assertThat(read)
            .as("aggregate index entries read by a claim of %d runs of one", claimed.size())
            .isLessThan(ownWalk + ownWalk / 2);
      }
      holder.rollback();
    } finally {
      db.execute("alter table outbox_events reset (autovacuum_enabled)");
    }
  }

  /** Entries of the aggregate index this session's transaction read so far. */
  private static long aggregateIndexEntriesReadSoFar(Connection connection) throws SQLException {
    try (Statement statement = connection.createStatement();
        ResultSet rs =
            statement.executeQuery(
                "select pg_stat_get_xact_tuples_returned("
                    + "'outbox_events_pending_aggregate_idx'::regclass)")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** Index entries of the outbox this session's transaction read so far. */
  private static long indexEntriesReadSoFar(Connection connection) throws SQLException {
    try (Statement statement = connection.createStatement();
        ResultSet rs =
            statement.executeQuery(
                "select coalesce(sum(pg_stat_get_xact_tuples_returned(indexrelid)), 0)"
                    + " from pg_index where indrelid = 'outbox_events'::regclass")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static Map<String, Long> lowestPendingPositions(Connection connection)
      throws SQLException {
    Map<String, Long> lowest = new HashMap<>();
    try (Statement statement = connection.createStatement();
        ResultSet rs =
            statement.executeQuery(
                "select aggregate_id, min(position) from outbox_events"
                    + " where processed_at is null group by aggregate_id")) {
      while (rs.next()) {
        lowest.put(rs.getString(1), rs.getLong(2));
      }
    }
    return lowest;
  }
}

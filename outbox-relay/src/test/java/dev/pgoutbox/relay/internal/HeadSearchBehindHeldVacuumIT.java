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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * While a transaction holds vacuum back, every event a relay publishes leaves its entry in the
 * pending indexes, and nothing can remove it. A strict claim looks for heads in position order, and
 * in a backlog most rows it looks at are not heads: it must tell them apart without stepping over
 * their aggregates' dead entries, or each claim costs the published history of every aggregate it
 * looks at. Index entries read are counted by PostgreSQL for the claim's own transaction ({@code
 * pg_stat_get_xact_tuples_returned} of each index), so the check does not depend on the machine's
 * speed.
 */
class HeadSearchBehindHeldVacuumIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static final int HOT_AGGREGATES = 10;
  private static final int PUBLISHED_EACH = 300;
  private static final int HOT_PENDING_EACH = 100;
  private static final int COLD_AGGREGATES = 90;
  private static final int BATCH = 100;

  // Every schema's outbox: only this transaction's reads count, and it read one of them (its claims
  // fix the search_path, so an unqualified name would not resolve to the test's schema).

  /** Entries read from every index of the outbox, by this session's transaction so far. */
  private static final String ALL_INDEXES =
      "select coalesce(sum(pg_stat_get_xact_tuples_returned(i.indexrelid)), 0)"
          + " from pg_index i join pg_class t on t.oid = i.indrelid"
          + " where t.relname = 'outbox_events'";

  /** Entries read from the aggregate index, by this session's transaction so far. */
  private static final String AGGREGATE_INDEX =
      "select coalesce(sum(pg_stat_get_xact_tuples_returned(oid)), 0) from pg_class"
          + " where relname = 'outbox_events_pending_aggregate_idx'";

  /** The held horizon: a snapshot older than every row a test writes. */
  private Connection holder;

  @BeforeEach
  void holdVacuumBack() throws SQLException {
    db.execute("alter table outbox_events set (autovacuum_enabled = off)");
    db.execute("truncate outbox_events");
    holder = db.connect();
    holder.setAutoCommit(false);
    try (Statement statement = holder.createStatement()) {
      statement.execute("set transaction isolation level repeatable read");
      statement.executeQuery("select 1").close();
    }
  }

  @AfterEach
  void release() throws SQLException {
    holder.rollback();
    holder.close();
    db.execute("alter table outbox_events reset (autovacuum_enabled)");
  }

  @Test
  void rowsThatAreNotHeadsAreToldApartWithoutSteppingOverTheirAggregatesDeadEntries()
      throws Exception {
    // Each hot aggregate's published history: dead entries before its first pending row.
    insertPerAggregate("hot-' || a", PUBLISHED_EACH, HOT_AGGREGATES);
    db.execute("update outbox_events set processed_at = now()");
    // The backlog: the hot aggregates' runs first (their heads, then rows that are not heads),
    // then the cold aggregates' heads behind them.
    insertPerAggregate("hot-' || a", HOT_PENDING_EACH, HOT_AGGREGATES);
    insertPerAggregate("cold-' || a", 1, COLD_AGGREGATES);

    Claim claim = claimOnce(ALL_INDEXES);

    // The first claim asks for 40 heads: the 10 hot ones, then past the 990 rows behind them
    // that are not heads, 30 cold ones.
    assertThat(claim.rows()).as("claimed").isNotEmpty();
    assertThat(claim.rows().stream().map(ClaimedRow::aggregateId).filter(a -> a.startsWith("cold")))
        .as("cold heads found behind the hot aggregates' backlog")
        .isNotEmpty();
    Map<String, Long> firstClaimed = new HashMap<>();
    for (ClaimedRow row : claim.rows()) {
      firstClaimed.merge(row.aggregateId(), row.position(), Math::min);
    }
    firstClaimed.forEach(
        (aggregate, position) ->
            assertThat(position)
                .as("%s is claimed from its first pending row on", aggregate)
                .isEqualTo(claim.lowestPending().get(aggregate)));

    // Stepping over the dead entries for each row that is not a head reads about 990 x 300;
    // telling it apart by its predecessor reads one entry each. Heads step over theirs once.
    int notHeads = HOT_AGGREGATES * (HOT_PENDING_EACH - 1);
    long headsWalk = (long) HOT_AGGREGATES * PUBLISHED_EACH;
    assertThat(claim.entriesRead())
        .as("index entries read by one claim past %d rows that are not heads", notHeads)
        .isLessThan(10L * notHeads + 2 * headsWalk);
  }

  /**
   * A run shorter than the claim reads per aggregate must end at its aggregate's last entry: read
   * on, it steps over the next aggregate's dead entries, for every head.
   */
  @Test
  void aShortRunStopsAtItsAggregatesEndNotAtTheNextAggregatesDeadEntries() throws Exception {
    // Every aggregate: its published history, then one pending event (a run of one).
    insertPerAggregate("agg-' || lpad(a::text, 3, '0')", PUBLISHED_EACH, 100);
    db.execute("update outbox_events set processed_at = now()");
    insertPerAggregate("agg-' || lpad(a::text, 3, '0')", 1, 100);

    Claim claim = claimOnce(AGGREGATE_INDEX);

    // The first claim asks for 40 heads and reads runs behind them (fewer heads than its batch).
    // Each head steps over its own aggregate's published entries once, to know it is a head; its
    // run must not step over the next aggregate's as well.
    assertThat(claim.rows()).as("claimed").hasSizeGreaterThan(1);
    long ownWalk = (long) claim.rows().size() * (PUBLISHED_EACH + 2);
    assertThat(claim.entriesRead())
        .as("aggregate index entries read by a claim of %d runs of one", claim.rows().size())
        .isLessThan(ownWalk + ownWalk / 2);
  }

  /**
   * {@code events} events for each of {@code aggregates}, round robin; the id is SQL on {@code a}.
   */
  private static void insertPerAggregate(String aggregateIdSql, int events, int aggregates) {
    db.execute(
        "insert into outbox_events (aggregate_type, aggregate_id, event_type, payload)"
            + " select 'order', '"
            + aggregateIdSql
            + ", 'order.step', '{}'::jsonb from generate_series(1, "
            + events
            + ") e, generate_series(1, "
            + aggregates
            + ") a order by e, a");
  }

  /** What one claim took, the index entries it read, and each aggregate's first pending row. */
  private record Claim(List<ClaimedRow> rows, long entriesRead, Map<String, Long> lowestPending) {}

  /** One strict claim in a transaction rolled back after it, counting entries with {@code sql}. */
  private static Claim claimOnce(String entriesReadSql) throws SQLException {
    Claimer claimer =
        new Claimer(BATCH, Ordering.STRICT, DeadLetterPolicy.HOLD_AGGREGATE, db.schema());
    try (Connection connection = db.connect()) {
      connection.setAutoCommit(false);
      DSLContext tx =
          DSL.using(connection, SQLDialect.POSTGRES, OutboxSchema.jooqSettings(db.schema()));
      Sql.configureClaimTransaction(tx, "head-search", Duration.ofSeconds(30), true);
      long before = queryLong(connection, entriesReadSql);
      List<ClaimedRow> rows = claimer.claim(tx);
      long read = queryLong(connection, entriesReadSql) - before;
      Map<String, Long> lowest = new HashMap<>();
      try (Statement statement = connection.createStatement();
          ResultSet rs =
              statement.executeQuery(
                  "select aggregate_id, min(position) from "
                      + db.schema()
                      + ".outbox_events"
                      + " where processed_at is null group by aggregate_id")) {
        while (rs.next()) {
          lowest.put(rs.getString(1), rs.getLong(2));
        }
      }
      connection.rollback();
      return new Claim(rows, read, lowest);
    }
  }

  private static long queryLong(Connection connection, String sql) throws SQLException {
    try (Statement statement = connection.createStatement();
        ResultSet rs = statement.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}

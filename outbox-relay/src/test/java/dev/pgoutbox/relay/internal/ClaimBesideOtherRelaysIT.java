package dev.pgoutbox.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.DeadLetterPolicy;
import dev.pgoutbox.relay.Ordering;
import dev.pgoutbox.testing.TestSchema;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A strict claim's search passes the heads other relays hold while they publish. It skips them by
 * their aggregate lock before probing for an earlier pending event, and that check (a session-level
 * try released at once) leaves no lock behind and never releases one the claim's own transaction
 * holds. Probes are counted by PostgreSQL for the claim's own session ({@code
 * pg_stat_get_xact_numscans}), so the checks are deterministic.
 */
class ClaimBesideOtherRelaysIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static final int AGGREGATES = 40;
  private static final int BATCH = 10;

  @BeforeEach
  void twoEventsForEachOfFortyAggregates() {
    db.execute("truncate outbox_events restart identity");
    db.execute(
        "insert into outbox_events (aggregate_type, aggregate_id, event_type, payload)"
            + " select 'order', 'agg-' || a, 'order.step', jsonb_build_object('seq', e)"
            + " from generate_series(1, 2) e, generate_series(1, "
            + AGGREGATES
            + ") a order by e, a");
  }

  @Test
  void headsAnotherRelayHoldsAreSkippedWithoutAProbe() throws Exception {
    try (Connection otherRelay = db.connect()) {
      otherRelay.setAutoCommit(false);
      // The other relay's batch: the first BATCH heads, each row and aggregate locked as its claim
      // locks them.
      int held = holdHeads(otherRelay, BATCH);
      assertThat(held).isEqualTo(BATCH);

      try (Connection connection = db.connect()) {
        connection.setAutoCommit(false);
        DSLContext tx = claimTransaction(connection);
        Claimer claimer =
            new Claimer(BATCH, Ordering.STRICT, DeadLetterPolicy.HOLD_AGGREGATE, db.schema());
        long probesBefore = aggregateIndexScans(connection);
        List<ClaimedRow> claimed = claimer.claim(tx);
        long probes = aggregateIndexScans(connection) - probesBefore;

        assertThat(claimed)
            .extracting(ClaimedRow::aggregateId)
            .as("the next heads, none of the other relay's aggregates")
            .containsExactlyInAnyOrderElementsOf(aggregates(BATCH + 1, 2 * BATCH));
        assertThat(probes)
            .as("one probe per head claimed, none for the %d heads the other relay holds", held)
            .isEqualTo(BATCH);
        connection.rollback();
      }
      otherRelay.rollback();
    }
  }

  @Test
  void theCheckReleasesNothingTheClaimsTransactionHolds() throws Exception {
    int namespace = Sql.aggregateLockNamespace(db.schema());
    try (Connection connection = db.connect()) {
      connection.setAutoCommit(false);
      DSLContext tx = claimTransaction(connection);
      // This transaction already holds agg-1's lock (as after an earlier statement of its own):
      // the check on agg-1's rows succeeds at once and must release only what it took.
      assertThat(tryLock(connection, "pg_try_advisory_xact_lock", namespace, "agg-1")).isTrue();
      Claimer claimer =
          new Claimer(BATCH, Ordering.STRICT, DeadLetterPolicy.HOLD_AGGREGATE, db.schema());
      List<ClaimedRow> claimed = claimer.claim(tx);
      assertThat(claimed).extracting(ClaimedRow::aggregateId).contains("agg-1");

      try (Connection other = db.connect()) {
        for (ClaimedRow row : claimed) {
          assertThat(tryLock(other, "pg_try_advisory_lock", namespace, row.aggregateId()))
              .as("%s is still held by the claim's transaction", row.aggregateId())
              .isFalse();
        }
      }
      connection.commit();
      assertThat(advisoryLocksHeld(connection, namespace))
          .as("nothing held once the claim's transaction ended")
          .isZero();
    }
  }

  @Test
  void aClaimLeavesNoAggregateLockButThoseOfTheAggregatesItClaimed() throws Exception {
    int namespace = Sql.aggregateLockNamespace(db.schema());
    try (Connection otherRelay = db.connect()) {
      otherRelay.setAutoCommit(false);
      holdHeads(otherRelay, BATCH / 2);
      try (Connection connection = db.connect()) {
        connection.setAutoCommit(false);
        DSLContext tx = claimTransaction(connection);
        Claimer claimer =
            new Claimer(BATCH, Ordering.STRICT, DeadLetterPolicy.HOLD_AGGREGATE, db.schema());
        for (int claim = 1; claim <= 3; claim++) {
          List<ClaimedRow> claimed = claimer.claim(tx);
          assertThat(claimed).as("claim %d", claim).isNotEmpty();
          long aggregatesClaimed = claimed.stream().map(ClaimedRow::aggregateId).distinct().count();
          assertThat(advisoryLocksHeld(connection, namespace))
              .as("claim %d: one lock per aggregate claimed, none from the checks", claim)
              .isEqualTo(aggregatesClaimed);
          if (claim == 2) {
            connection.rollback();
          } else {
            connection.commit();
          }
          assertThat(advisoryLocksHeld(connection, namespace))
              .as("claim %d: none once its transaction ended", claim)
              .isZero();
          tx = claimTransaction(connection);
        }
      }
      otherRelay.rollback();
    }
  }

  private static DSLContext claimTransaction(Connection connection) {
    DSLContext tx =
        DSL.using(connection, SQLDialect.POSTGRES, OutboxSchema.jooqSettings(db.schema()));
    Sql.configureClaimTransaction(tx, "claim-beside-relays", Duration.ofSeconds(30), true);
    return tx;
  }

  /** Locks the first {@code heads} heads as a relay's claim does: each row and its aggregate. */
  private static int holdHeads(Connection connection, int heads) throws SQLException {
    return ((Number)
            single(
                connection,
                "select count(*) from (select position from "
                    + db.schema()
                    + ".outbox_events where position <= ?"
                    + " and pg_try_advisory_xact_lock(?, hashtext(aggregate_type || ':'"
                    + " || aggregate_id)) order by position for update) held",
                (long) heads,
                Sql.aggregateLockNamespace(db.schema())))
        .intValue();
  }

  private static boolean tryLock(
      Connection connection, String function, int namespace, String aggregateId)
      throws SQLException {
    return (Boolean)
        single(
            connection,
            "select " + function + "(?, hashtext('order:' || ?::text))",
            namespace,
            aggregateId);
  }

  /** Advisory locks in the relays' namespace {@code connection}'s session holds, of any level. */
  private static long advisoryLocksHeld(Connection connection, int namespace) throws SQLException {
    return (Long)
        single(
            connection,
            "select count(*) from pg_locks where locktype = 'advisory'"
                + " and pid = pg_backend_pid() and classid::bigint = (?::bigint & 4294967295)"
                + " and objsubid = 2 and granted",
            namespace);
  }

  /** The one value {@code sql} answers with {@code binds}. */
  private static Object single(Connection connection, String sql, Object... binds)
      throws SQLException {
    try (PreparedStatement statement = connection.prepareStatement(sql)) {
      for (int i = 0; i < binds.length; i++) {
        statement.setObject(i + 1, binds[i]);
      }
      try (ResultSet rs = statement.executeQuery()) {
        rs.next();
        return rs.getObject(1);
      }
    }
  }

  /** Scans of the aggregate index this session started: one per probe for an earlier event. */
  private static long aggregateIndexScans(Connection connection) throws SQLException {
    try (Statement statement = connection.createStatement();
        ResultSet rs =
            statement.executeQuery(
                "select pg_stat_get_xact_numscans('"
                    + db.schema()
                    + ".outbox_events_pending_aggregate_idx'::regclass)")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static List<String> aggregates(int from, int to) {
    return java.util.stream.IntStream.rangeClosed(from, to).mapToObj(a -> "agg-" + a).toList();
  }
}

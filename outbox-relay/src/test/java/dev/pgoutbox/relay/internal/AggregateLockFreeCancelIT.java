package dev.pgoutbox.relay.internal;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.testing.TestSchema;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The claim's check that an aggregate's lock is free ({@link Sql#aggregateLockFree}) takes a
 * session-level advisory lock and releases it in the same {@code CASE}: a session-level lock
 * survives the transaction's abort, so a cancel (a statement timeout, {@code pg_cancel_backend})
 * landing between the two calls would leave it held on a pooled connection, and every other relay
 * would find that aggregate taken for as long as the connection lives. PostgreSQL acts on a cancel
 * only where it checks for interrupts, and none of the calls between the try and the release (the
 * lock manager's non-waiting try, {@code hashtext}, the concatenation, the {@code CASE}, the
 * release) checks: the pair is atomic with respect to cancels. This test cancels the check on a
 * large table a few hundred times at varying moments and finds no lock left; the same check with an
 * interrupt point between the two calls ({@code pg_sleep(0)}) leaks under the same attack, which
 * shows the attack lands.
 */
class AggregateLockFreeCancelIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated(2);

  private static final int NAMESPACE = 4711;

  @BeforeAll
  static void manyAggregates() {
    db.execute(
        "insert into outbox_events (aggregate_type, aggregate_id, event_type, payload)"
            + " select 'order', 'o-' || i, 'order.step', '{}' from generate_series(1, 200000) i");
  }

  @Test
  void aCancelledCheckNeverLeavesTheAggregatesLockHeld() throws Exception {
    Condition check =
        Sql.aggregateLockFree(NAMESPACE, OUTBOX_EVENTS.AGGREGATE_TYPE, OUTBOX_EVENTS.AGGREGATE_ID);
    DSLContext render = DSL.using(SQLDialect.POSTGRES, OutboxSchema.jooqSettings(db.schema()));
    String sql = render.renderInlined(render.selectCount().from(OUTBOX_EVENTS).where(check));

    Attack attack = attack(sql);
    assertThat(attack.cancelled()).as("cancels that landed mid-scan").isGreaterThan(50);
    assertThat(attack.leaked()).as("advisory locks left after a cancel").isZero();
  }

  @Test
  void theSameAttackLeaksWhenTheCheckHasAnInterruptPointBetweenItsCalls() throws Exception {
    String key = "pg_catalog.hashtext(aggregate_type || ':' || aggregate_id)";
    String vulnerable =
        "select count(*) from outbox_events where case when pg_catalog.pg_try_advisory_lock("
            + NAMESPACE
            + ", "
            + key
            + ") then pg_catalog.pg_sleep(0) is not null and pg_catalog.pg_advisory_unlock("
            + NAMESPACE
            + ", "
            + key
            + ") else false end";

    assertThat(attack(vulnerable).leaked()).as("the attack can find a leak").isPositive();
  }

  private record Attack(int cancelled, int leaked) {}

  /** Runs {@code sql} 300 times under statement timeouts of 1 to 30 ms, counting leaks. */
  private static Attack attack(String sql) throws SQLException {
    int cancelled = 0;
    int leaked = 0;
    try (Connection c = db.connect();
        Statement s = c.createStatement()) {
      s.execute("set search_path = " + db.schema() + ", pg_catalog");
      for (int round = 0; round < 300; round++) {
        s.execute("set statement_timeout = '" + (1 + round % 30) + "ms'");
        try {
          s.execute(sql);
        } catch (SQLException e) {
          if (!"57014".equals(e.getSQLState())) {
            throw e;
          }
          cancelled++;
        }
        resetStatementTimeout(s);
        try (ResultSet rs =
            s.executeQuery(
                "select count(*) from pg_locks where locktype = 'advisory'"
                    + " and pid = pg_backend_pid() and classid = "
                    + NAMESPACE)) {
          rs.next();
          if (rs.getInt(1) > 0) {
            leaked++;
            s.execute("select pg_advisory_unlock_all()");
          }
        }
      }
    }
    return new Attack(cancelled, leaked);
  }

  /**
   * {@code SET statement_timeout = 0} runs under the timeout it replaces: on a loaded machine a
   * timeout of a millisecond or two cancels the {@code SET} itself, so it is sent again until it
   * takes.
   */
  private static void resetStatementTimeout(Statement s) throws SQLException {
    for (int tries = 0; ; tries++) {
      try {
        s.execute("set statement_timeout = 0");
        return;
      } catch (SQLException e) {
        if (!"57014".equals(e.getSQLState()) || tries >= 100) {
          throw e;
        }
      }
    }
  }
}

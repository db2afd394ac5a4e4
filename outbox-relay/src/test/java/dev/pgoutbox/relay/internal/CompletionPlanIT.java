package dev.pgoutbox.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.Completion;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.testing.TestSchema;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The completion statements on a real PostgreSQL are planned at every execution, never kept as a
 * server-side prepared statement: a plan kept from a small table scanned the whole aggregate index
 * once per position as the backlog grew (docs/wal-completion.md). pgjdbc names a statement after
 * five executions on one connection; the completion must never be among the session's prepared
 * statements, and its plan for a large batch over a large backlog looks each position up.
 */
class CompletionPlanIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  @ParameterizedTest
  @EnumSource(Completion.class)
  void theCompletionIsPlannedWithThePositionsInHand(Completion completion) throws Exception {
    db.execute("truncate outbox_events");
    Marker marker = new Marker(completion, db.schema());
    try (Connection connection = db.connect()) {
      DSLContext tx = DSL.using(connection, SQLDialect.POSTGRES);
      // A small table first, as when a relay starts: ten completions on one connection.
      for (int i = 1; i <= 10; i++) {
        EventRows.insert(db.dsl(), "small", i);
        long position = db.queryLong("select max(position) from outbox_events");
        assertThat(marker.published(tx, List.of(position))).isEqualTo(1);
      }
      assertThat(preparedCompletions(connection))
          .as("completions kept as a prepared statement on the session")
          .isZero();

      db.execute(
          "insert into outbox_events (aggregate_type, aggregate_id, event_type, payload)"
              + " select 'order', 'a-' || (g % 500), 'e', '{}' from generate_series(1, 20000) g");
      db.execute("analyze outbox_events");
      String positions =
          "(select array_agg(position) from (select position from outbox_events"
              + " where processed_at is null order by position limit 2000) p)";
      String plan =
          String.join(
              "\n",
              db.dsl()
                  .fetch(
                      "explain "
                          + MarkStatements.deleted(db.schema()).sql().replace("?", positions))
                  .getValues(0, String.class));
      assertThat(plan)
          .as("the plan of a batch of 2,000 over 20,000 pending rows")
          .doesNotContain("outbox_events_pending_aggregate_idx");
    }
  }

  private static long preparedCompletions(Connection connection) throws Exception {
    try (Statement s = connection.createStatement();
        ResultSet rs =
            s.executeQuery(
                "select count(*) from pg_prepared_statements where statement like '%unnest%'")) {
      rs.next();
      return rs.getLong(1);
    }
  }
}

package dev.pgoutbox.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.DeadLetterPolicy;
import dev.pgoutbox.relay.Ordering;
import dev.pgoutbox.testing.TestSchema;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * While heads are expensive (a long transaction holds vacuum back, and each head's probe steps over
 * the dead index entries of its aggregate's published events), a relay behind its backlog fills
 * batches from runs behind fewer heads instead of one event from each of a batch's worth of heads.
 * The cost is forced here (every head counts as expensive, or none does), so the check does not
 * depend on the machine's speed; what it checks is the shape of the claims, in order.
 */
class ExpensiveHeadsClaimIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static final int AGGREGATES = 200;
  private static final int EVENTS_EACH = 5;
  private static final int BATCH = 50;
  private static final int CLAIMS = 8;

  @BeforeEach
  void backlogOfShortRunsOverManyAggregates() {
    db.execute("truncate outbox_events");
    db.execute(
        "insert into outbox_events (aggregate_type, aggregate_id, event_type, payload)"
            + " select 'order', 'agg-' || a, 'order.step', jsonb_build_object('seq', e)"
            + " from generate_series(1, "
            + EVENTS_EACH
            + ") e, generate_series(1, "
            + AGGREGATES
            + ") a order by e, a");
  }

  @Test
  void cheapHeadsFillABatchWithOneEventFromEachOfABatchOfAggregates() throws Exception {
    List<ClaimedRow> last =
        lastOfSeveralClaims(Claimer.Tuning.DEFAULT.expensiveHead(Long.MAX_VALUE));

    assertThat(last).hasSize(BATCH);
    assertThat(perAggregate(last).values()).as("one event per aggregate").containsOnly(1L);
  }

  /**
   * A relay started against a backlog over many aggregates begins with a few heads and runs behind
   * them, and doubles the heads while its batches come back full with all of them used: its fifth
   * claim of 500 is one event from each of 500 aggregates (32 heads, 40 with the first full scan's
   * extra, then 80, 160, 320). Grown by a quarter, it read runs behind 96 heads at that point and
   * took thirteen claims to get there, at twice the cost per claim.
   */
  @Test
  void aRelayStartedAgainstABacklogClaimsHeadsAloneWithinAFewClaims() throws Exception {
    db.execute("truncate outbox_events");
    db.execute(
        "insert into outbox_events (aggregate_type, aggregate_id, event_type, payload)"
            + " select 'order', 'agg-' || a, 'order.step', jsonb_build_object('seq', e)"
            + " from generate_series(1, 5) e, generate_series(1, 1000) a order by e, a");

    List<ClaimedRow> fifth = claims(500, 5, Claimer.Tuning.DEFAULT.expensiveHead(Long.MAX_VALUE));

    assertThat(fifth).hasSize(500);
    assertThat(perAggregate(fifth).values()).as("one event per aggregate").containsOnly(1L);
  }

  @Test
  void expensiveHeadsFillBatchesFromLongerRunsBehindFewerHeadsInOrder() throws Exception {
    List<ClaimedRow> last = lastOfSeveralClaims(Claimer.Tuning.DEFAULT.expensiveHead(0));

    Map<String, Long> perAggregate = perAggregate(last);
    assertThat(perAggregate.size())
        .as("a fraction of the heads a cheap claim takes")
        .isLessThanOrEqualTo(BATCH / 3);
    assertThat(last.size())
        .as("the runs behind them fill most of the batch")
        .isGreaterThanOrEqualTo(BATCH / 2);
    assertThat(perAggregate.values())
        .as("each run from the head on, whole (all its events are pending)")
        .allMatch(events -> events > 1);
    for (String aggregate : perAggregate.keySet()) {
      List<Long> positions =
          last.stream()
              .filter(row -> row.aggregateId().equals(aggregate))
              .map(ClaimedRow::position)
              .toList();
      assertThat(positions).as("%s in position order", aggregate).isSorted();
      assertThat(positions.get(0))
          .as("%s starts at its head", aggregate)
          .isEqualTo(
              db.queryLong(
                  "select min(position) from outbox_events where aggregate_id = '"
                      + aggregate
                      + "'"));
    }
  }

  private static List<ClaimedRow> lastOfSeveralClaims(Claimer.Tuning tuning) throws Exception {
    return claims(BATCH, CLAIMS, tuning);
  }

  /**
   * The last of {@code count} claims of batches of {@code batch}, in rolled-back transactions so
   * the backlog stays; the claimer adapts as it goes.
   */
  private static List<ClaimedRow> claims(int batch, int count, Claimer.Tuning tuning)
      throws Exception {
    Claimer claimer =
        new Claimer(batch, Ordering.STRICT, DeadLetterPolicy.HOLD_AGGREGATE, db.schema(), tuning);
    List<ClaimedRow> rows = List.of();
    try (Connection connection = db.connect()) {
      connection.setAutoCommit(false);
      DSLContext tx =
          DSL.using(connection, SQLDialect.POSTGRES, OutboxSchema.jooqSettings(db.schema()));
      for (int claim = 0; claim < count; claim++) {
        Sql.configureClaimTransaction(tx, "expensive-heads-it", Duration.ofSeconds(30), true);
        rows = claimer.claim(tx);
        connection.rollback();
      }
    }
    return rows;
  }

  private static Map<String, Long> perAggregate(List<ClaimedRow> rows) {
    return rows.stream()
        .collect(Collectors.groupingBy(ClaimedRow::aggregateId, Collectors.counting()));
  }
}

package dev.pgoutbox.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.DeadLetterPolicy;
import dev.pgoutbox.relay.Ordering;
import dev.pgoutbox.testing.TestSchema;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A claim reads rows in proportion to its batch when the statistics were taken while the relay kept
 * up: analysed with a handful of events pending among many published, then a backlog built up
 * before the next analyse (its own schema; rows read are counted as in {@link
 * ClaimStaysBoundedIT}).
 */
class ClaimOnStaleStatisticsIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static final int PUBLISHED = 200_000;
  private static final int BACKLOG = 20_000;
  private static final int BATCH = 100;

  /**
   * Under a steady 7,000 writes a second, one relay kept up for two and a half minutes, then its
   * batches took 8, 35 and 81 s while 900,000 events piled up, until an autovacuum's analyse about
   * two minutes later; after it the relay caught up in a minute. Statistics that count a few dozen
   * pending rows make a plan that reads every pending row look cheap, and it grows slower with the
   * backlog it causes.
   */
  @Test
  void aBacklogThatBuiltUpAfterTheLastAnalyseIsClaimedABatchAtATime() throws Exception {
    db.execute("truncate outbox_events");
    db.execute(
        "insert into outbox_events (aggregate_type, aggregate_id, event_type, payload,"
            + " processed_at) select 'order', 'agg-' || (i % 1000), 'order.step', '{}'::jsonb,"
            + " now() from generate_series(1, "
            + PUBLISHED
            + ") i");
    db.execute("vacuum analyze outbox_events");
    db.execute(
        "insert into outbox_events (aggregate_type, aggregate_id, event_type, payload)"
            + " select 'order', 'agg-' || (i % 1000), 'order.step', '{}'::jsonb"
            + " from generate_series(1, "
            + BACKLOG
            + ") i");

    Claimer claimer =
        new Claimer(BATCH, Ordering.STRICT, DeadLetterPolicy.HOLD_AGGREGATE, db.schema());
    // Enough claims for both statements: runs behind heads, and a batch of heads.
    List<Long> rowsRead = ClaimStaysBoundedIT.rowsReadByClaims(db, claimer, 10);
    assertThat(rowsRead)
        .as(
            "rows read by each claim of %d from %d pending rows the statistics do not know",
            BATCH, BACKLOG)
        .allSatisfy(read -> assertThat(read).isLessThan(10L * BATCH));
  }
}

package dev.pgoutbox.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.DeadLetterPolicy;
import dev.pgoutbox.relay.Ordering;
import dev.pgoutbox.testing.TestSchema;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A claim reads rows in proportion to its batch on an analysed table too (its own schema: {@link
 * ClaimStaysBoundedIT} needs a table never analysed). Rows read are counted as there.
 */
class ClaimOnAnalysedTableIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static final int BACKLOG = 20_000;
  private static final int BATCH = 100;

  /**
   * With statistics, PostgreSQL expects a head (the row whose position is its aggregate's lowest)
   * to be rare, so that a search from position 0 must read every pending row to fill its limit, and
   * reads them all in a sequential scan and a sort instead of walking the position index and
   * stopping at the limit: 2.5 s for one claim on 100,000 pending rows, where the index walk reads
   * the 500 heads it hands out. The claim transaction turns sequential scans off.
   */
  @Test
  void aClaimFromTheStartOfAnAnalysedBacklogOfManyAggregatesReadsAboutItsBatch() throws Exception {
    db.execute("truncate outbox_events");
    db.execute(
        "insert into outbox_events (aggregate_type, aggregate_id, event_type, payload)"
            + " select 'order', 'agg-' || (i % 2000), 'order.step', '{}'::jsonb"
            + " from generate_series(1, "
            + BACKLOG
            + ") i");
    db.execute("vacuum analyze outbox_events");

    for (int batch : new int[] {BATCH, 2 * BATCH}) {
      // Each batch size in a new claimer: its first claim scans from position 0.
      Claimer claimer =
          new Claimer(batch, Ordering.STRICT, DeadLetterPolicy.HOLD_AGGREGATE, db.schema());
      // Enough claims for the claimer to ask for a batch of heads (the heads-only claim).
      List<Long> rowsRead = ClaimStaysBoundedIT.rowsReadByClaims(db, claimer, 10);
      assertThat(rowsRead)
          .as("rows read by each claim of %d from the start of %d pending rows", batch, BACKLOG)
          .allSatisfy(read -> assertThat(read).isLessThan(10L * batch));
    }
  }
}

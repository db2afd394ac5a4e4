package dev.pgoutbox.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.DeadLetterPolicy;
import dev.pgoutbox.relay.Ordering;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.testing.TestSchema;
import java.sql.Connection;
import java.util.List;
import java.util.UUID;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A row that commits below the claimer's low-water mark (its writer took a low position, then was
 * held up past the settle time before committing) is claimed by the next claim that finds nothing
 * above the mark, not only by the next periodic full scan. Time is taken out of the test: the mark
 * settles at once, the periodic full scan never comes on its own, and full scans have no budget.
 */
class ClaimerLateCommitIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  @BeforeEach
  void emptyOutbox() {
    db.dsl().execute("truncate outbox_events");
  }

  @ParameterizedTest
  @EnumSource(Ordering.class)
  void aRowCommittedBelowTheLowWaterMarkIsClaimedByTheNextEmptyClaim(Ordering ordering)
      throws Exception {
    Claimer claimer =
        new Claimer(
            10, ordering, DeadLetterPolicy.HOLD_AGGREGATE, db.schema(), 0, Long.MAX_VALUE / 4, 0);
    try (Connection late = db.connect()) {
      late.setAutoCommit(false);
      UUID lateRow =
          EventRows.insert(
              DSL.using(late, SQLDialect.POSTGRES, OutboxSchema.jooqSettings(db.schema())),
              "late",
              1);
      UUID early = EventRows.insert(db.dsl(), "early", 1);

      assertThat(claimAndComplete(claimer)).as("the first claim").containsExactly(early);
      // The mark now stands on the early row's position, above the late row's.
      late.commit();

      assertThat(claimAndComplete(claimer))
          .as("the claim after the late commit looks below the mark when it finds nothing above")
          .containsExactly(lateRow);
    }
  }

  /** Claims in one transaction, marks what it got processed, and returns the claimed ids. */
  private static List<UUID> claimAndComplete(Claimer claimer) {
    List<UUID> ids =
        db.dsl()
            .transactionResult(
                configuration ->
                    claimer.claim(configuration.dsl()).stream().map(ClaimedRow::id).toList());
    for (UUID id : ids) {
      db.dsl()
          .execute(
              "update outbox_events set processed_at = now() where id = ?::uuid", id.toString());
    }
    return ids;
  }
}

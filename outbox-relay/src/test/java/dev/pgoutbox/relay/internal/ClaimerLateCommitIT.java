package dev.pgoutbox.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.DeadLetterPolicy;
import dev.pgoutbox.relay.Ordering;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A row that commits below the claimer's low-water mark (its writer took a low position, then was
 * held up past the settle time before committing) is claimed by the next claim that finds nothing
 * above the mark, or after its writer's notification while newer rows keep coming, not only by the
 * next periodic full scan. Time is taken out of the test: the mark settles at once, the periodic
 * full scan never comes on its own, and full scans have no budget.
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
            10,
            ordering,
            DeadLetterPolicy.HOLD_AGGREGATE,
            db.schema(),
            Claimer.Tuning.DEFAULT.settle(0).fullScanEvery(Long.MAX_VALUE / 4, 0));
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

  /**
   * The late commit while newer rows keep coming: no claim comes back empty, so only the writer's
   * notification, which says where its events start, sends the claim below the mark.
   */
  @ParameterizedTest
  @EnumSource(Ordering.class)
  void aRowCommittedBelowTheLowWaterMarkIsClaimedAfterItsNotificationWhileNewerRowsKeepComing(
      Ordering ordering) throws Exception {
    Claimer claimer =
        new Claimer(
            10,
            ordering,
            DeadLetterPolicy.HOLD_AGGREGATE,
            db.schema(),
            Claimer.Tuning.DEFAULT.settle(0).fullScanEvery(Long.MAX_VALUE / 4, 0));
    try (NotificationWaiter waiter =
            new NotificationWaiter(
                db::connect,
                OutboxSchema.notifyChannel(db.schema()),
                "pgoutbox-late-commit-it",
                new RelayLog("late-commit-it"),
                Duration.ofSeconds(1));
        Connection late = db.connect()) {
      assertThat(waiter.await(Duration.ofMillis(1))).as("the first wait connects").isTrue();
      late.setAutoCommit(false);
      UUID lateRow =
          EventRows.insert(
              DSL.using(late, SQLDialect.POSTGRES, OutboxSchema.jooqSettings(db.schema())),
              "late",
              1);
      UUID early = EventRows.insert(db.dsl(), "early", 1);
      assertThat(claimAndComplete(claimer)).as("the first claim").containsExactly(early);
      waiter.takeLowestAnnounced();

      late.commit();
      UUID newer = EventRows.insert(db.dsl(), "newer", 1);
      AtomicLong announced = new AtomicLong(NotificationWaiter.NONE_ANNOUNCED);
      Eventually.await(
          "both writers' notifications",
          Duration.ofSeconds(10),
          () -> {
            waiter.drain();
            announced.accumulateAndGet(waiter.takeLowestAnnounced(), Math::min);
            return announced.get() <= position(lateRow);
          });
      assertThat(announced.get())
          .as("the lowest position announced is the late row's")
          .isEqualTo(position(lateRow));
      claimer.committedFrom(announced.get());

      List<UUID> claimed = new ArrayList<>(claimAndComplete(claimer));
      assertThat(claimed)
          .as("the claim after the late writer's notification looks from its position")
          .contains(lateRow);
      claimed.addAll(claimAndComplete(claimer));
      assertThat(claimed).as("the next claim, the rest").containsExactlyInAnyOrder(lateRow, newer);
    }
  }

  private static long position(UUID id) {
    return db.dsl()
        .fetchSingle("select position from outbox_events where id = ?::uuid", id.toString())
        .get(0, Long.class);
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

package dev.pgoutbox.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.DeadLetterPolicy;
import dev.pgoutbox.relay.Ordering;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.testing.TestSchema;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The rule that keeps a WAL relay's drainer and its reader apart: the drainer claims only parked
 * rows, never one the reader publishes, and never a parked row ahead of an earlier row of its
 * aggregate whose place in commit order is unknown (published by the reader, completion not yet
 * committed; not read yet), and parked rows in the commit order the reader recorded. Claims run on
 * the plain table, no decoding needed.
 */
class ParkedOnlyClaimIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  @BeforeEach
  void emptyOutbox() {
    db.execute("truncate outbox_events");
  }

  @ParameterizedTest
  @EnumSource(DeadLetterPolicy.class)
  void theDrainerClaimsOnlyParkedRunsWhoseHeadIsParked(DeadLetterPolicy policy) {
    // a: the reader's row first (published, not completed), then a parked one behind it.
    UUID aReaders = insert("a", 1, false);
    insert("a", 2, true);
    // b: parked, then one the reader has not read yet, then parked again: the reader reads in
    // commit order, so the unread one commits after both parked ones (or not yet), and does not
    // hold back the second (before schema V12 the run stopped at it, in position order).
    UUID bParked = insert("b", 1, true);
    insert("b", 2, false);
    UUID bParkedAgain = insert("b", 3, true);
    // c: only the reader's.
    UUID cReaders = insert("c", 1, false);
    // d: parked all along.
    UUID d1 = insert("d", 1, true);
    UUID d2 = insert("d", 2, true);

    Claimer drainer = claimer(policy);
    drainer.parkedOnly(true);
    assertThat(claim(drainer)).containsExactlyInAnyOrder(bParked, bParkedAgain, d1, d2);

    Claimer fallenBack = claimer(policy);
    fallenBack.parkedOnly(true);
    fallenBack.parkedOnly(false);
    assertThat(claim(fallenBack))
        .as("after the slot is lost, every pending row is the table relay's")
        .contains(aReaders, bParked, cReaders, d1, d2);
  }

  /**
   * With writers not serialized per aggregate a later position can commit first: the drainer
   * follows the commit order the reader recorded when it parked the rows ({@code commit_lsn}), not
   * the position, whether the rows come as heads alone, in runs, or one claim at a time. Rows of
   * the backlog parked when the slot was created (commit order 0, never read from the slot) go
   * first, in position order among themselves.
   */
  @ParameterizedTest
  @EnumSource(DeadLetterPolicy.class)
  void theDrainerClaimsParkedRowsInCommitOrderNotPositionOrder(DeadLetterPolicy policy) {
    // a: positions 1, 2, 3 committed in the order 3, 1, 2.
    UUID a1 = insert("a", 1, 200L);
    UUID a2 = insert("a", 2, 300L);
    UUID a3 = insert("a", 3, 100L);
    // b: two rows of the backlog, then one read from the slot with a lower position than a third
    // row of the backlog would have (rows of the backlog committed before the slot).
    UUID b1 = insert("b", 1, 0L);
    UUID b2 = insert("b", 2, 0L);
    UUID b3 = insert("b", 3, 50L);
    // c: position 1 committed after position 2; position 2 is the only one parked yet.
    UUID c1 = insert("c", 1, (Long) null);
    UUID c2 = insert("c", 2, 100L);

    Claimer drainer = claimer(policy);
    drainer.parkedOnly(true);
    List<UUID> claimed = claim(drainer);
    assertThat(claimed).containsSubsequence(a3, a1, a2).containsSubsequence(b1, b2, b3);
    assertThat(claimed)
        .as("c1 not parked yet (committed after c2 or not: unknown): c is held back whole")
        .doesNotContain(c1, c2);

    Claimer oneAtATime =
        new Claimer(
            1,
            Ordering.STRICT,
            policy,
            db.schema(),
            Claimer.Tuning.DEFAULT.settle(0).fullScanEvery(0, 0));
    oneAtATime.parkedOnly(true);
    List<UUID> order = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      List<UUID> batch = claimAndComplete(oneAtATime);
      order.addAll(batch);
    }
    assertThat(order).containsSubsequence(a3, a1, a2).containsSubsequence(b1, b2, b3);
    assertThat(order).hasSize(6);
  }

  /** Claims one batch and marks it published, as the drainer does. */
  private static List<UUID> claimAndComplete(Claimer claimer) {
    return db.dsl()
        .transactionResult(
            configuration -> {
              List<UUID> ids =
                  claimer.claim(configuration.dsl()).stream().map(ClaimedRow::id).toList();
              for (UUID id : ids) {
                configuration
                    .dsl()
                    .execute(
                        "update outbox_events set processed_at = now() where id = '" + id + "'");
              }
              return ids;
            });
  }

  /**
   * The drainer's claim reads the parked rows, not the reader's backlog: while the reader drains a
   * backlog (or falls behind), the drainer polls, and each of its claims used to walk every pending
   * row to find none parked (in a 600,000-event WAL drain it kept a backend busy half the time).
   * Counted by PostgreSQL for the claim's session, before and after an analyse.
   */
  @ParameterizedTest
  @EnumSource(DeadLetterPolicy.class)
  void theDrainerReadsTheParkedRowsNotTheReadersBacklog(DeadLetterPolicy policy) throws Exception {
    db.execute(
        "insert into outbox_events (aggregate_type, aggregate_id, event_type, payload)"
            + " select 'order', 'agg-' || (i % 1000), 'order.step', '{}'::jsonb"
            + " from generate_series(1, 20000) i");
    UUID parked1 = insert("parked", 1, true);
    UUID parked2 = insert("parked", 2, true);
    for (boolean analysed : new boolean[] {false, true}) {
      if (analysed) {
        db.execute("analyze outbox_events");
      }
      Claimer drainer = claimer(policy);
      drainer.parkedOnly(true);
      List<Long> rowsRead = new ArrayList<>();
      try (Connection connection = db.connect()) {
        connection.setAutoCommit(false);
        DSLContext tx =
            DSL.using(connection, SQLDialect.POSTGRES, OutboxSchema.jooqSettings(db.schema()));
        for (int claim = 1; claim <= 12; claim++) {
          long before = ClaimStaysBoundedIT.rowsReadSoFar(connection);
          assertThat(drainer.claim(tx).stream().map(ClaimedRow::id))
              .as("claim %d", claim)
              .containsExactly(parked1, parked2);
          rowsRead.add(ClaimStaysBoundedIT.rowsReadSoFar(connection) - before);
          connection.rollback();
        }
      }
      assertThat(rowsRead)
          .as("rows read by each claim (analysed: %s)", analysed)
          .allSatisfy(read -> assertThat(read).isLessThan(100));
    }
  }

  private static Claimer claimer(DeadLetterPolicy policy) {
    return new Claimer(
        100,
        Ordering.STRICT,
        policy,
        db.schema(),
        Claimer.Tuning.DEFAULT.settle(0).fullScanEvery(0, 0));
  }

  private static UUID insert(String aggregate, int seq, boolean parked) {
    return insert(aggregate, seq, parked ? 0L : null);
  }

  /**
   * A row, parked with {@code commitLsn} as its place in commit order (as the reader parks it), or
   * left unparked when null.
   */
  private static UUID insert(String aggregate, int seq, @Nullable Long commitLsn) {
    UUID id = EventRows.insert(db.dsl(), aggregate, seq);
    if (commitLsn != null) {
      db.execute(
          "update outbox_events set parked = true, commit_lsn = "
              + commitLsn
              + " where id = '"
              + id
              + "'");
    }
    return id;
  }

  private static List<UUID> claim(Claimer claimer) {
    return db.dsl()
        .transactionResult(
            configuration ->
                claimer.claim(configuration.dsl()).stream().map(ClaimedRow::id).toList());
  }
}

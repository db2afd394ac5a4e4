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
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The rule that keeps a WAL relay's drainer and its reader apart: the drainer claims only parked
 * rows, never one the reader publishes, and never a parked row ahead of an earlier row of its
 * aggregate that the reader still has in hand (published, completion not yet committed), nor a
 * parked row behind one the reader has not decoded yet. Claims run on the plain table, no decoding
 * needed.
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
    // b: parked, then one the reader has not decoded yet, then parked again.
    UUID bParked = insert("b", 1, true);
    insert("b", 2, false);
    insert("b", 3, true);
    // c: only the reader's.
    UUID cReaders = insert("c", 1, false);
    // d: parked all along.
    UUID d1 = insert("d", 1, true);
    UUID d2 = insert("d", 2, true);

    Claimer drainer = claimer(policy);
    drainer.parkedOnly(true);
    assertThat(claim(drainer)).containsExactlyInAnyOrder(bParked, d1, d2);

    Claimer fallenBack = claimer(policy);
    fallenBack.parkedOnly(true);
    fallenBack.parkedOnly(false);
    assertThat(claim(fallenBack))
        .as("after the slot is lost, every pending row is the table relay's")
        .contains(aReaders, bParked, cReaders, d1, d2);
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
    UUID id = EventRows.insert(db.dsl(), aggregate, seq);
    if (parked) {
      db.execute("update outbox_events set parked = true where id = '" + id + "'");
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

package dev.pgoutbox.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.DeadLetterPolicy;
import dev.pgoutbox.relay.Ordering;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.testing.TestSchema;
import java.util.List;
import java.util.UUID;
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

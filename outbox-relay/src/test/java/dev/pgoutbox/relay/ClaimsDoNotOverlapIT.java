package dev.pgoutbox.relay;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.testing.DeadRows;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.DeliveryChecker;
import dev.pgoutbox.testing.TestSchema;
import java.sql.Connection;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Two relays never hold rows of one aggregate at once, even when a row with a lower position than
 * the run a relay is publishing becomes eligible behind its back: a writer that commits late, or an
 * admin retry of a dead head under {@link DeadLetterPolicy#RELEASE_AGGREGATE}. Relay A's publisher
 * is held on a latch while relay B claims; driven by {@code runOnce()} on two threads, no sleeps.
 */
class ClaimsDoNotOverlapIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  @BeforeEach
  void emptyOutbox() {
    db.execute("truncate outbox_events");
  }

  private static OutboxRelay relay(String name, Publisher publisher, RelayConfig config) {
    return OutboxRelay.builder()
        .name(name)
        .dataSource(db.dataSource())
        .schema(db.schema())
        .publisher(publisher)
        .config(config)
        .build();
  }

  @Test
  void aLateCommitDoesNotLetASecondRelayIntoAnAggregateInFlight() throws Exception {
    RecordingPublisher heldA = new RecordingPublisher().closeGate();
    RecordingPublisher freeB = new RecordingPublisher();
    OutboxRelay a = relay("a", heldA, RelayConfig.ofDefaults());
    OutboxRelay b = relay("b", freeB, RelayConfig.ofDefaults());
    try (Connection late = db.connect()) {
      late.setAutoCommit(false);
      // e1 takes the lowest position but commits only after relay A claimed e2 and e3.
      EventRows.insert(
          DSL.using(late, SQLDialect.POSTGRES, OutboxSchema.jooqSettings(db.schema())), "x", 1);
      EventRows.insert(db.dsl(), "x", 2);
      EventRows.insert(db.dsl(), "x", 3);
      EventRows.insert(db.dsl(), "other", 1);

      CompletableFuture<Integer> runA = runOnceAsync(a);
      assertThat(heldA.awaitEntered(10)).as("relay A is publishing").isTrue();
      late.commit();

      int claimedByB = b.runOnce();

      assertThat(freeB.delivered())
          .as("relay B must not publish aggregate x while relay A holds e2, e3")
          .extracting(OutboxMessage::aggregateId)
          .doesNotContain("x");
      heldA.open();
      assertThat(runA.get(10, TimeUnit.SECONDS)).isEqualTo(3);
      assertThat(claimedByB).isLessThanOrEqualTo(1);
    }
    // The late e1 goes out afterwards, on its own: the writers committed out of order.
    drain(b);
    assertThat(seqs(heldA.delivered(), "x")).containsExactly(2, 3);
    assertThat(seqs(freeB.delivered(), "x")).containsExactly(1);
    assertThat(pending()).isZero();
  }

  @Test
  void anAdminRetryUnderReleaseDoesNotLetASecondRelayIntoAnAggregateInFlight() throws Exception {
    RelayConfig release =
        RelayConfig.builder().deadLetterPolicy(DeadLetterPolicy.RELEASE_AGGREGATE).build();
    RecordingPublisher heldA = new RecordingPublisher().closeGate();
    RecordingPublisher freeB = new RecordingPublisher();
    OutboxRelay a = relay("a", heldA, release);
    OutboxRelay b = relay("b", freeB, release);
    UUID n1 = EventRows.insert(db.dsl(), "n", 1);
    EventRows.insert(db.dsl(), "n", 2);
    EventRows.insert(db.dsl(), "n", 3);
    db.execute(
        "update outbox_events set dead_at = now(), attempts = 10, last_error = 'boom' where id = '"
            + n1
            + "'");

    CompletableFuture<Integer> runA = runOnceAsync(a);
    assertThat(heldA.awaitEntered(10)).isTrue();
    assertThat(DeadRows.retry(db.dsl(), n1)).isTrue();

    int claimedByB = b.runOnce();

    assertThat(claimedByB)
        .as("relay B claims nothing of aggregate n while A holds n2, n3")
        .isZero();
    assertThat(freeB.delivered()).isEmpty();
    heldA.open();
    assertThat(runA.get(10, TimeUnit.SECONDS)).isEqualTo(2);
    // What a retry under RELEASE_AGGREGATE promises: the revived event goes out once, after the
    // successors that were already released.
    drain(b);
    assertThat(seqs(heldA.delivered(), "n")).containsExactly(2, 3);
    assertThat(seqs(freeB.delivered(), "n")).containsExactly(1);
  }

  @Test
  void aRelayLocksEveryRowItHandsToItsPublisher() throws Exception {
    RecordingPublisher held = new RecordingPublisher().closeGate();
    OutboxRelay a = relay("a", held, RelayConfig.ofDefaults());
    for (int seq = 1; seq <= 4; seq++) {
      EventRows.insert(db.dsl(), "x", seq);
    }
    CompletableFuture<Integer> run = runOnceAsync(a);
    assertThat(held.awaitEntered(10)).isTrue();
    try {
      // Every row of the run is locked, not only its head: another session cannot lock any.
      long unlocked =
          db.queryLong(
              "select count(*) from (select 1 from outbox_events for update skip locked) u");
      assertThat(unlocked).isZero();
    } finally {
      held.open();
    }
    assertThat(run.get(10, TimeUnit.SECONDS)).isEqualTo(4);
  }

  /**
   * The same late commit against the heads-only claim: with a batch of two and two aggregates
   * pending, a batch's worth of heads is asked for from the first claim, so every row is claimed as
   * a head, with no run read behind it (the claim a relay uses while many aggregates are pending).
   */
  @Test
  void aLateCommitDoesNotLetASecondRelayIntoAnAggregateInFlightWhenEveryRowIsAHead()
      throws Exception {
    RelayConfig twoPerBatch = RelayConfig.builder().batchSize(2).build();
    RecordingPublisher heldA = new RecordingPublisher().closeGate();
    RecordingPublisher freeB = new RecordingPublisher();
    OutboxRelay a = relay("a", heldA, twoPerBatch);
    OutboxRelay b = relay("b", freeB, twoPerBatch);
    try (Connection late = db.connect()) {
      late.setAutoCommit(false);
      EventRows.insert(
          DSL.using(late, SQLDialect.POSTGRES, OutboxSchema.jooqSettings(db.schema())), "x", 1);
      EventRows.insert(db.dsl(), "x", 2);
      EventRows.insert(db.dsl(), "x", 3);
      EventRows.insert(db.dsl(), "other", 1);

      CompletableFuture<Integer> runA = runOnceAsync(a);
      assertThat(heldA.awaitEntered(10)).as("relay A is publishing").isTrue();
      // Relay A holds the heads x2 and other1, one row per aggregate, each locked.
      assertThat(heldA.delivered()).isEmpty();
      late.commit();

      int claimedByB = b.runOnce();

      assertThat(claimedByB)
          .as("x1 is a head now, but relay A holds aggregate x; other1 is locked by A")
          .isZero();
      heldA.open();
      assertThat(runA.get(10, TimeUnit.SECONDS)).isEqualTo(2);
    }
    drain(b);
    assertThat(seqs(heldA.delivered(), "x")).containsExactly(2);
    assertThat(seqs(heldA.delivered(), "other")).containsExactly(1);
    assertThat(seqs(freeB.delivered(), "x")).containsExactly(1, 3);
    assertThat(pending()).isZero();
  }

  @Test
  void anAdminRetryUnderReleaseDoesNotLetASecondRelayInWhenEveryRowIsAHead() throws Exception {
    RelayConfig release =
        RelayConfig.builder()
            .batchSize(2)
            .deadLetterPolicy(DeadLetterPolicy.RELEASE_AGGREGATE)
            .build();
    RecordingPublisher heldA = new RecordingPublisher().closeGate();
    RecordingPublisher freeB = new RecordingPublisher();
    OutboxRelay a = relay("a", heldA, release);
    OutboxRelay b = relay("b", freeB, release);
    UUID n1 = EventRows.insert(db.dsl(), "n", 1);
    EventRows.insert(db.dsl(), "n", 2);
    EventRows.insert(db.dsl(), "n", 3);
    EventRows.insert(db.dsl(), "m", 1);
    db.execute(
        "update outbox_events set dead_at = now(), attempts = 10, last_error = 'boom' where id = '"
            + n1
            + "'");

    CompletableFuture<Integer> runA = runOnceAsync(a);
    assertThat(heldA.awaitEntered(10)).isTrue();
    assertThat(DeadRows.retry(db.dsl(), n1)).isTrue();

    int claimedByB = b.runOnce();

    assertThat(claimedByB).as("relay B claims nothing while A holds n2 and m1").isZero();
    heldA.open();
    assertThat(runA.get(10, TimeUnit.SECONDS)).isEqualTo(2);
    drain(b);
    assertThat(seqs(heldA.delivered(), "n")).containsExactly(2);
    assertThat(seqs(freeB.delivered(), "n")).containsExactly(1, 3);
  }

  @Test
  void aHeadsOnlyClaimLocksEveryRowItHandsToItsPublisher() throws Exception {
    RecordingPublisher held = new RecordingPublisher().closeGate();
    OutboxRelay a = relay("a", held, RelayConfig.builder().batchSize(3).build());
    for (String aggregate : List.of("x", "y", "z", "w")) {
      EventRows.insert(db.dsl(), aggregate, 1);
    }
    CompletableFuture<Integer> run = runOnceAsync(a);
    assertThat(held.awaitEntered(10)).isTrue();
    try {
      long unlocked =
          db.queryLong(
              "select count(*) from (select 1 from outbox_events for update skip locked) u");
      assertThat(unlocked).as("three heads handed out and locked, one left").isEqualTo(1);
    } finally {
      held.open();
    }
    assertThat(run.get(10, TimeUnit.SECONDS)).isEqualTo(3);
  }

  private static CompletableFuture<Integer> runOnceAsync(OutboxRelay relay) {
    CompletableFuture<Integer> result = new CompletableFuture<>();
    Thread.ofVirtual()
        .start(
            () -> {
              try {
                result.complete(relay.runOnce());
              } catch (Throwable t) {
                result.completeExceptionally(t);
              }
            });
    return result;
  }

  private static void drain(OutboxRelay relay) throws InterruptedException {
    for (int i = 0; i < 10 && relay.runOnce() > 0; i++) {
      // another batch
    }
  }

  private static List<Integer> seqs(List<OutboxMessage> delivered, String aggregate) {
    return delivered.stream()
        .filter(m -> m.aggregateId().equals(aggregate))
        .map(m -> DeliveryChecker.seqOf(m.payload()))
        .toList();
  }

  private static long pending() {
    return db.dsl().fetchCount(OUTBOX_EVENTS, OUTBOX_EVENTS.PROCESSED_AT.isNull());
  }
}

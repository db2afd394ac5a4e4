package dev.pgoutbox.relay;

import static dev.pgoutbox.relay.WalTestRelays.config;
import static dev.pgoutbox.relay.WalTestSupport.assertNoneLostOrReordered;
import static dev.pgoutbox.relay.WalTestSupport.fallBacksInto;
import static dev.pgoutbox.relay.WalTestSupport.pending;
import static dev.pgoutbox.relay.WalTestSupport.slotExists;
import static dev.pgoutbox.relay.WalTestSupport.terminateReader;
import static dev.pgoutbox.relay.testing.EventRows.event;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.relay.wal.WalRelay;
import dev.pgoutbox.testing.DeliveryChecker;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The WAL relay's order and completion where the reader and the drainer meet, on a real PostgreSQL
 * with {@code wal_level=logical}: parked events drain in the commit order the slot gave them. Each
 * test reads a slot of its own.
 */
class WalRelayOrderIT {

  @RegisterExtension static final TestSchema db = TestSchema.migratedWithLogicalDecoding(10);

  @RegisterExtension final WalTestRelays relays = new WalTestRelays(db);

  @BeforeEach
  void emptyOutbox() {
    db.execute("truncate outbox_events");
  }

  /**
   * Writers not serialized per aggregate: the first inserts seq 2 (the lower position) and commits
   * last, the second inserts seq 1 and commits first. The broker refuses seq 1 once (retryable),
   * which parks the aggregate, so seq 2 is parked behind it. The drainer used to claim them by
   * position and published seq 2 before seq 1; it now follows the commit order recorded when they
   * were parked.
   */
  @Test
  void parkedEventsDrainInCommitOrderNotPositionOrder() throws Exception {
    AtomicBoolean refusing = new AtomicBoolean(true);
    RecordingPublisher publisher =
        new RecordingPublisher()
            .decide(
                m ->
                    refusing.get()
                        ? PublishResult.retryable("broker says no")
                        : PublishResult.published());
    WalRelay relay = relays.relay("parked_commit_order", publisher, config().build());
    relay.start();
    Eventually.await("the reader attached", relay::isReading);
    Outbox outbox =
        Outbox.builder().schema(db.schema()).serializeWritersPerAggregate(false).build();
    try (Connection first = db.connect();
        Connection second = db.connect()) {
      first.setAutoCommit(false);
      second.setAutoCommit(false);
      outbox.append(first, event("o-1", 2));
      outbox.append(second, event("o-1", 1));
      second.commit();
      first.commit();
    }
    Eventually.await(
        "both events parked",
        () ->
            db.queryLong("select count(*) from outbox_events where parked and processed_at is null")
                == 2);
    assertThat(publisher.delivered()).isEmpty();

    refusing.set(false);
    Eventually.await("both published", () -> publisher.delivered().size() == 2);
    assertThat(publisher.deliveredPayloads())
        .as("commit order")
        .extracting(DeliveryChecker::seqOf)
        .containsExactly(1, 2);
    Eventually.await("both completed", () -> pending(db) == 0);
  }

  /**
   * The slot's confirmed position moved by hand past an unread event ({@code
   * pg_replication_slot_advance} while no reader streams it): the slot never streams that event,
   * and a later event of its aggregate used to go out through the reader while the skipped one
   * stayed pending for good. The reader notes the pending rows when it attaches; once the stream
   * has passed every commit before then and one of them was not read, it falls back to the table
   * (ERROR, {@code onWalFallBack}), and the later event, which it held back, follows the skipped
   * one.
   */
  @Test
  void aSlotAdvancedByHandPastUnreadEventsFallsBackWithNothingLostOrReordered() throws Exception {
    List<String> fallBacks = new CopyOnWriteArrayList<>();
    RecordingPublisher publisher = new RecordingPublisher();
    WalRelay first =
        relays.relay("advanced", publisher, config().build(), fallBacksInto(fallBacks));
    first.start();
    Eventually.await("the reader attached", first::isReading);
    first.stop(Duration.ofSeconds(5));

    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    db.dsl().transaction(tx -> outbox.append(tx.dsl(), event("x-1", 1)));
    String past = db.dsl().fetchValue("select pg_current_wal_insert_lsn()::text").toString();
    db.dsl().transaction(tx -> outbox.append(tx.dsl(), event("x-1", 2)));
    Eventually.await(
        "the slot advanced by hand past the first event",
        () -> {
          try {
            db.execute("select pg_replication_slot_advance('advanced', '" + past + "')");
            return true;
          } catch (RuntimeException stillStreamed) {
            return false;
          }
        });

    WalRelay second =
        relays.relay("advanced", publisher, config().build(), fallBacksInto(fallBacks));
    second.start();
    Eventually.await("the relay fell back", () -> second.hasFallenBack() && !fallBacks.isEmpty());
    assertThat(fallBacks).singleElement().asString().contains("skipped 1 pending event");
    Eventually.await("both published", () -> pending(db) == 0);
    assertThat(publisher.deliveredPayloads())
        .extracting(DeliveryChecker::seqOf)
        .containsExactly(1, 2);
  }

  /**
   * The same while the relay runs: its reader is held in its publisher when an operator ends its
   * WAL sender, and the events written then are skipped by an advance before it attaches again.
   */
  @Test
  void aSlotAdvancedByHandWhileTheRelayRunsFallsBackWithNothingLostOrReordered() throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    WalRelay relay = relays.relay("advanced_running", publisher, config().build());
    relay.start();
    Eventually.await("the reader attached", relay::isReading);
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    publisher.closeGate();
    db.dsl().transaction(tx -> outbox.append(tx.dsl(), event("w-1", 1)));
    assertThat(publisher.awaitEntered(30)).as("the reader holds w-1").isTrue();
    Eventually.await(
        "the reader's WAL sender ended",
        () -> {
          terminateReader(db, "advanced_running");
          return db.queryLong(
                  "select count(*) from pg_replication_slots"
                      + " where slot_name = 'advanced_running' and not active")
              == 1;
        });
    db.dsl().transaction(tx -> outbox.append(tx.dsl(), event("x-1", 1)));
    String past = db.dsl().fetchValue("select pg_current_wal_insert_lsn()::text").toString();
    db.dsl().transaction(tx -> outbox.append(tx.dsl(), event("x-1", 2)));
    db.execute("select pg_replication_slot_advance('advanced_running', '" + past + "')");
    publisher.open();

    Eventually.await("the relay fell back", relay::hasFallenBack);
    Eventually.await("everything published", () -> pending(db) == 0);
    Map<String, Integer> written = Map.of("w-1", 1, "x-1", 2);
    assertNoneLostOrReordered(written, publisher.deliveredPayloads());
  }

  /**
   * After the slot was dropped every instance falls back and claims every pending row. One of them
   * restarted creates a new slot (parking the pending backlog) and reads it, publishing the rows it
   * does not park; the instance still fallen back used to keep claiming those rows beside it, so
   * both published them (again, after later ones). The fallen-back instance now finds the new slot
   * in its next claim (behind the creation lock, so no claim of its overlaps the creation), claims
   * parked rows only from then on, stands by, and takes over the slot when the reader stops.
   */
  @Test
  void aFallenBackInstanceFollowsTheNewSlotAnotherInstanceCreated() throws Exception {
    List<String> resumed = new CopyOnWriteArrayList<>();
    RelayListener listener =
        new RelayListener() {
          @Override
          public void onWalResumed(String slotName) {
            resumed.add(slotName);
          }
        };
    RecordingPublisher publisherA = new RecordingPublisher();
    WalRelay a = relays.relay("follow", publisherA, config().build(), listener);
    a.start();
    Eventually.await("A reads the slot", a::isReading);
    WalRelay b = relays.relay("follow", new RecordingPublisher(), config().build());
    b.start();
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    db.dsl().transaction(tx -> outbox.append(tx.dsl(), event("x-1", 1)));
    Eventually.await("published through the slot", () -> pending(db) == 0);

    Eventually.await(
        "the slot dropped",
        () -> {
          terminateReader(db, "follow");
          return db.dropReplicationSlot("follow") && !slotExists(db, "follow");
        });
    Eventually.await("both fell back", () -> a.hasFallenBack() && b.hasFallenBack());

    b.stop(Duration.ofSeconds(5));
    RecordingPublisher publisherB = new RecordingPublisher();
    WalRelay restarted = relays.relay("follow", publisherB, config().build());
    restarted.start();
    Eventually.await(
        "an instance reads the new slot", () -> restarted.isReading() || a.isReading());

    // The restarted instance's publisher holds what it is given. Were it the reader, the
    // fallen-back instance used to claim and publish the held event too (it claimed every pending
    // row); now its next claim finds the new slot.
    publisherB.closeGate();
    db.dsl().transaction(tx -> outbox.append(tx.dsl(), event("n-1", 1)));
    Eventually.await(
        "the fallen-back instance follows the new slot, or publishes the new event",
        () -> (!a.hasFallenBack() && !resumed.isEmpty()) || publisherA.published("n-1"));
    assertThat(resumed).containsExactly("follow");
    publisherB.open();
    Eventually.await("published and completed", () -> pending(db) == 0);
    List<OutboxMessage> all = new ArrayList<>(publisherA.delivered());
    all.addAll(publisherB.delivered());
    assertThat(all).extracting(OutboxMessage::aggregateId).containsOnlyOnce("n-1");

    // Whichever reads, the other stands by and takes the slot over when it stops.
    boolean aReads = a.isReading();
    WalRelay other = aReads ? restarted : a;
    RecordingPublisher otherPublisher = aReads ? publisherB : publisherA;
    (aReads ? a : restarted).stop(Duration.ofSeconds(5));
    Eventually.await("the other instance takes the slot over", other::isReading);
    db.dsl().transaction(tx -> outbox.append(tx.dsl(), event("n-1", 2)));
    Eventually.await(
        "published by it",
        () ->
            otherPublisher.delivered().stream()
                .anyMatch(
                    m -> m.aggregateId().equals("n-1") && DeliveryChecker.seqOf(m.payload()) == 2));
    Eventually.await("completed", () -> pending(db) == 0);
  }

  /**
   * A back-off function that throws while the reader decides a failed event's outcome dead-letters
   * that event with the reason, as the table relay does; the reader does not fail its batch (which
   * would publish the batch again and again) and the other events flow.
   */
  @Test
  void anErrorWhileDecidingOneOutcomeDeadLettersThatEventOnly() throws Exception {
    RecordingPublisher publisher =
        new RecordingPublisher()
            .decide(
                m ->
                    m.aggregateId().equals("failing")
                        ? PublishResult.retryable("broker hiccup")
                        : PublishResult.published());
    RelayConfig brokenBackoff =
        config()
            .backoff(
                attempt -> {
                  throw new IllegalStateException("backoff broke");
                })
            .build();
    WalRelay relay = relays.relay("undecided", publisher, brokenBackoff);
    relay.start();
    Eventually.await("the reader attached", relay::isReading);
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    db.dsl()
        .transaction(
            tx -> {
              outbox.append(tx.dsl(), event("failing", 1));
              outbox.append(tx.dsl(), event("good", 1));
            });

    Eventually.await(
        "the failing event dead-lettered with the reason",
        () ->
            db.queryLong(
                    "select count(*) from outbox_events where aggregate_id = 'failing'"
                        + " and dead_at is not null and last_error like '%could not decide%'"
                        + " and last_error like '%backoff broke%'")
                == 1);
    Eventually.await("the good event completed", () -> pending(db) == 1);
    assertThat(publisher.delivered())
        .as("published once: the batch was not read and published again")
        .extracting(OutboxMessage::aggregateId)
        .containsExactly("good");
    assertThat(relay.isReading()).isTrue();
  }
}

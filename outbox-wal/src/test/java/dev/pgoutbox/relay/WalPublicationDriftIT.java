package dev.pgoutbox.relay;

import static dev.pgoutbox.relay.WalTestSupport.assertNoneLostOrReordered;
import static dev.pgoutbox.relay.WalTestSupport.pending;
import static dev.pgoutbox.relay.WalTestSupport.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.relay.testing.TestWalRelays;
import dev.pgoutbox.relay.wal.WalRelay;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The publication the WAL relay's slot streams, changed under it. {@code pgoutput} streams what the
 * publication says at each transaction's place in the WAL: inserts written while it did not publish
 * them (or filtered them, or left columns out) are skipped by the slot for good, even once the
 * publication is restored. The relay used to check only that the table was in the publication, at
 * start; an idle reader then confirmed the slot past the skipped events, which stayed pending,
 * unparked, read by no one. Now the start refuses such a publication, and a reader that finds it
 * changed confirms nothing more, drops the slot and falls back to the table, which still holds
 * every pending event.
 */
class WalPublicationDriftIT {

  @RegisterExtension static final TestSchema db = TestSchema.migratedWithLogicalDecoding(8);

  private final List<WalRelay> relays = new ArrayList<>();

  @BeforeEach
  void freshOutbox() {
    db.execute("truncate outbox_events");
    db.execute("drop publication if exists " + publication());
  }

  @AfterEach
  void stopAndDrop() {
    relays.forEach(r -> r.stop(Duration.ofSeconds(2)));
    Eventually.await("slot dropped", () -> db.dropReplicationSlot("drift"));
  }

  @Test
  void aPublicationThatLeavesInsertsOutIsRefusedAtStartNamingWhatToRun() {
    String table = db.schema() + ".outbox_events";
    db.execute(
        "create publication "
            + publication()
            + " for table "
            + table
            + " with (publish = 'update')");
    assertThatThrownBy(() -> start(new RecordingPublisher()))
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("publication " + publication() + " does not publish inserts")
        .hasMessageContaining("ALTER PUBLICATION " + publication() + " SET (publish = 'insert')");

    db.execute("drop publication " + publication());
    db.execute(
        "create publication "
            + publication()
            + " for table "
            + table
            + " where (aggregate_type <> 'audit') with (publish = 'insert')");
    assertThatThrownBy(() -> start(new RecordingPublisher()))
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("publication " + publication() + " filters the rows of " + table)
        .hasMessageContaining("ALTER PUBLICATION " + publication() + " DROP TABLE " + table);

    db.execute("drop publication " + publication());
    db.execute(
        "create publication "
            + publication()
            + " for table "
            + table
            + " (id, position, aggregate_type, aggregate_id, event_type) with (publish = 'insert')");
    assertThatThrownBy(() -> start(new RecordingPublisher()))
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("publication " + publication() + " leaves columns of " + table)
        .hasMessageContaining("payload");

    assertThat(db.queryLong("select count(*) from pg_replication_slots where slot_name = 'drift'"))
        .as("no slot created for a publication that would skip events")
        .isZero();
  }

  @Test
  void insertsLeftOutOfThePublicationForAWhileAreDeliveredFromTheTableInOrder() throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    List<String> fallBacks = new CopyOnWriteArrayList<>();
    WalRelay relay = start(publisher, fallBacks);
    Map<String, Integer> written = new HashMap<>(write(db, 3, 1, 2));
    Eventually.await("streamed", () -> publisher.delivered().size() == 6);

    db.execute("alter publication " + publication() + " set (publish = 'update, delete')");
    written.putAll(write(db, 3, 3, 3)); // the slot skips these: only the table can deliver them
    db.execute("alter publication " + publication() + " set (publish = 'insert')");
    written.putAll(write(db, 3, 6, 1)); // streamed again, and must not overtake those
    Eventually.await("the relay fell back", relay::hasFallenBack);
    assertThat(fallBacks)
        .anyMatch(
            r -> r.contains("was altered, dropped or re-created") || r.contains("publish inserts"));
    Eventually.await("everything delivered and completed", () -> pending(db) == 0);
    written.putAll(write(db, 3, 7, 1));
    Eventually.await("later events too", () -> pending(db) == 0);

    assertNoneLostOrReordered(written, publisher.deliveredPayloads());
  }

  /**
   * Changed and restored while no relay ran (every instance down, or its connection hung): the
   * reader that attaches next reads its baseline from the restored publication, and the slot, still
   * behind the change, skips the events written meanwhile. Before, they stayed pending, unread by
   * anyone, for good; now the attach sees that the publication's catalog rows are newer than the
   * slot's catalog_xmin and hands every pending event to the table relay.
   */
  @Test
  void aPublicationChangedAndRestoredWhileNoRelayRanLosesNothingAtTheNextStart() throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    WalRelay first = start(publisher);
    Map<String, Integer> written = new HashMap<>(write(db, 3, 1, 1));
    Eventually.await("streamed", () -> pending(db) == 0);
    first.stop(Duration.ofSeconds(10));

    db.execute("alter publication " + publication() + " set (publish = 'update, delete')");
    written.putAll(write(db, 3, 2, 2)); // the slot skips these
    db.execute("alter publication " + publication() + " set (publish = 'insert')");
    written.putAll(write(db, 3, 4, 1)); // streamed, and must not overtake those

    WalRelay again = start(publisher);
    Eventually.await("the reader attached", again::isReading);
    Eventually.await("everything delivered", () -> pending(db) == 0);
    written.putAll(write(db, 3, 5, 1));
    Eventually.await("later events too", () -> pending(db) == 0);

    assertNoneLostOrReordered(written, publisher.deliveredPayloads());
  }

  /**
   * Undone before any check could see it: the events written meanwhile are still skipped by the
   * slot, so the reader tells by the publication's catalog rows, which any change rewrites.
   */
  @Test
  void aTableDroppedFromThePublicationAndAddedBackIsNoticedAndLosesNothing() throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    List<String> fallBacks = new CopyOnWriteArrayList<>();
    WalRelay relay = start(publisher, fallBacks);
    WalRelay standby = start(publisher, new CopyOnWriteArrayList<>());
    Map<String, Integer> written = new HashMap<>(write(db, 2, 1, 1));
    Eventually.await("streamed", () -> publisher.delivered().size() == 2);

    String table = db.schema() + ".outbox_events";
    db.execute("alter publication " + publication() + " drop table " + table);
    written.putAll(write(db, 2, 2, 2));
    db.execute("alter publication " + publication() + " add table " + table);
    written.putAll(write(db, 2, 4, 1));

    Eventually.await(
        "both instances fell back", () -> relay.hasFallenBack() && standby.hasFallenBack());
    assertThat(fallBacks)
        .anyMatch(
            r ->
                r.contains("was altered, dropped or re-created") || r.contains("does not include"));
    Eventually.await("everything delivered and completed", () -> pending(db) == 0);
    assertNoneLostOrReordered(written, publisher.deliveredPayloads());
    assertThat(db.queryLong("select count(*) from pg_replication_slots where slot_name = 'drift'"))
        .as("the slot that skipped events is gone: no reader resumes it")
        .isZero();

    // Back to WAL mode: a new slot, the backlog parked; nothing skipped is left behind.
    relays.forEach(r -> r.stop(Duration.ofSeconds(5)));
    Eventually.await("slot dropped", () -> db.dropReplicationSlot("drift"));
    WalRelay again = start(publisher, new CopyOnWriteArrayList<>());
    Eventually.await("reading again", again::isReading);
    written.putAll(write(db, 2, 5, 2));
    Eventually.await("streamed again", () -> pending(db) == 0);
    assertNoneLostOrReordered(written, publisher.deliveredPayloads());
  }

  private static String publication() {
    return "pub_" + db.schema();
  }

  private WalRelay start(RecordingPublisher publisher) {
    return start(publisher, new CopyOnWriteArrayList<>());
  }

  private WalRelay start(RecordingPublisher publisher, List<String> fallBacks) {
    WalRelay relay =
        TestWalRelays.builder(db, "drift", publisher)
            .config(
                RelayConfig.builder()
                    .batchSize(100)
                    .pollInterval(Duration.ofMillis(50))
                    .exponentialBackoff(Duration.ofMillis(50), 1.0, 0.0, Duration.ofMillis(50))
                    .build())
            .listener(WalTestSupport.fallBacksInto(fallBacks))
            .build();
    relays.add(relay);
    relay.start();
    return relay;
  }
}

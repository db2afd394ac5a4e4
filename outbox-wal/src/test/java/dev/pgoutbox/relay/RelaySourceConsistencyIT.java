package dev.pgoutbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.relay.wal.WalRelay;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A table relay and a WAL relay both publish every pending event by their own rule, so one of each
 * on an outbox (or WAL relays on two slots) would publish events twice. The registry refuses the
 * second source whichever starts first, and a refused {@link WalRelay} creates nothing: no slot to
 * hold WAL for good, no publication, no parked rows.
 */
class RelaySourceConsistencyIT {

  @RegisterExtension static final TestSchema db = TestSchema.migratedWithLogicalDecoding(4);

  private final List<AutoCloseable> running = new ArrayList<>();

  @BeforeEach
  void emptyRegistry() {
    db.execute("truncate outbox_relays");
    db.execute("truncate outbox_events");
  }

  @AfterEach
  void stopAllAndDropSlots() throws Exception {
    for (AutoCloseable relay : running) {
      relay.close();
    }
    // A stopped reader's WAL sender may hold its slot a moment longer.
    Eventually.await(
        "the test's slots are released",
        () ->
            db.queryLong(
                    "select count(*) from pg_replication_slots where slot_name like 'src\\_%'"
                        + " and active")
                == 0);
    db.execute(
        "select pg_drop_replication_slot(slot_name) from pg_replication_slots"
            + " where slot_name like 'src\\_%'");
    db.execute("drop publication if exists src_" + db.schema());
  }

  @Test
  void aWalRelayBesideATableRelayIsRefusedAndCreatesNothing() {
    db.execute(
        "insert into outbox_events (aggregate_type, aggregate_id, event_type, payload)"
            + " values ('order', 'o-1', 'order.placed', '{}')");
    startTableRelay("table-1");

    WalRelay wal = walRelay("wal-1", "src_a");
    assertThatThrownBy(wal::start)
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("pgoutbox-relay[wal-1] - refuses to start")
        .hasMessageContaining(
            "source (WalRelay on replication slot src_a) differs from the source (OutboxRelay on"
                + " the table)")
        .hasMessageContaining("relay 'table-1'");

    assertThat(db.queryLong("select count(*) from pg_replication_slots where slot_name = 'src_a'"))
        .as("no slot left behind to hold WAL")
        .isZero();
    assertThat(
            db.queryLong(
                "select count(*) from pg_publication where pubname = 'src_" + db.schema() + "'"))
        .isZero();
    assertThat(db.queryLong("select count(*) from outbox_events where parked"))
        .as("the pending event stays the table relay's")
        .isZero();
    assertThat(db.queryLong("select count(*) from outbox_relays")).isEqualTo(1);
  }

  @Test
  void aTableRelayBesideAWalRelayIsRefused() {
    startWalRelay("wal-1", "src_b");

    assertThatThrownBy(() -> startTableRelay("table-1"))
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("pgoutbox-relay[table-1] - refuses to start")
        .hasMessageContaining(
            "source (OutboxRelay on the table) differs from the source (WalRelay on replication"
                + " slot src_b)")
        .hasMessageContaining("relay 'wal-1'");
    assertThat(db.queryLong("select count(*) from outbox_relays")).isEqualTo(1);
  }

  @Test
  void walRelaysOnTwoSlotsAreRefusedAndOnOneSlotTheyShare() {
    startWalRelay("wal-1", "src_c");
    startWalRelay("wal-2", "src_c");

    WalRelay other = walRelay("wal-3", "src_d");
    assertThatThrownBy(other::start)
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining(
            "source (WalRelay on replication slot src_d) differs from the source (WalRelay on"
                + " replication slot src_c)");
    assertThat(db.queryLong("select count(*) from pg_replication_slots where slot_name = 'src_d'"))
        .isZero();
    assertThat(db.queryLong("select count(*) from outbox_relays")).isEqualTo(2);
  }

  @Test
  void aRegistrationWrittenBeforeSourcesWereRecordedBlocksNeitherSource() {
    // What a relay of a library before schema version 8 inserts: no source. It may be a table relay
    // or a WAL relay, so it is checked as before (ordering, policy), and a fleet of either kind can
    // be upgraded one instance at a time.
    db.execute(
        "insert into outbox_relays (instance_id, relay_name, ordering, dead_letter_policy)"
            + " values (gen_random_uuid(), 'older-library', 'STRICT', 'HOLD_AGGREGATE')");

    WalRelay wal = startWalRelay("wal-1", "src_e");
    assertThat(wal.isRunning()).isTrue();
    assertThat(db.queryLong("select count(*) from outbox_relays where source is null"))
        .isEqualTo(1);
    assertThatThrownBy(() -> startTableRelay("table-1"))
        .as("the new WAL relay's own row is checked")
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("relay 'wal-1'");
  }

  @Test
  void aRegistryWithoutTheSourceColumnNamesTheMigrationToRun() {
    db.execute("alter table outbox_relays drop column source");
    try {
      assertThatThrownBy(() -> startTableRelay("table-1"))
          .isInstanceOf(OutboxException.class)
          .hasMessageContaining("outbox_relays is missing or lacks a column")
          .hasMessageContaining("to apply migrations V3 and V8");
      WalRelay wal = walRelay("wal-1", "src_f");
      assertThatThrownBy(wal::start)
          .isInstanceOf(OutboxException.class)
          .hasMessageContaining("to apply migrations V3 and V8");
      assertThat(
              db.queryLong("select count(*) from pg_replication_slots where slot_name = 'src_f'"))
          .isZero();
    } finally {
      db.execute(
          "alter table outbox_relays add column source varchar(80) not null default 'TABLE'");
    }
  }

  @Test
  void aWalRelayWhoseRegistrationExpiredStopsItselfOnceATableRelayTookOver() {
    WalRelay wal = startWalRelay("wal-1", "src_g");
    Eventually.await("the WAL relay reads", wal::isReading);
    OutboxRelay table = afterExpiry(() -> startTableRelay("table-1"));

    // isRunning() turns false as the stop begins; the reader ends within the stop's timeout.
    Eventually.await(
        "the WAL relay stops at its next heartbeat, its reader with it",
        () -> !wal.isRunning() && !wal.isReading());
    assertThat(table.isRunning()).isTrue();
    assertThat(db.queryLong("select count(*) from outbox_relays where relay_name = 'table-1'"))
        .isEqualTo(1);
  }

  @Test
  void aTableRelayWhoseRegistrationExpiredStopsItselfOnceAWalRelayTookOver() {
    OutboxRelay table = startTableRelay("table-1");
    WalRelay wal = afterExpiry(() -> startWalRelay("wal-1", "src_h"));

    Eventually.await("the table relay stops at its next heartbeat", () -> !table.isRunning());
    assertThat(wal.isRunning()).isTrue();
  }

  /**
   * Starts a relay as if the live one had stalled past its expiry: its row is aged, then the new
   * relay's registration removes it. The stalled relay's heartbeat (every 5 s) may refresh the row
   * in between (a few milliseconds); the new relay is then refused, and this ages it again.
   */
  private static <T> T afterExpiry(Supplier<T> start) {
    for (int attempt = 1; ; attempt++) {
      db.execute("update outbox_relays set heartbeat_at = now() - interval '1 hour'");
      try {
        return start.get();
      } catch (OutboxException refused) {
        if (attempt == 5) {
          throw refused;
        }
      }
    }
  }

  private OutboxRelay startTableRelay(String name) {
    OutboxRelay relay =
        OutboxRelay.builder()
            .name(name)
            .dataSource(db.dataSource())
            .schema(db.schema())
            .publisher(new RecordingPublisher())
            .config(RelayConfig.builder().listenForNotifications(false).build())
            .build();
    relay.start();
    running.add(relay);
    return relay;
  }

  private WalRelay startWalRelay(String name, String slot) {
    WalRelay relay = walRelay(name, slot);
    relay.start();
    running.add(() -> relay.stop(Duration.ofSeconds(5)));
    return relay;
  }

  private static WalRelay walRelay(String name, String slot) {
    return WalRelay.builder()
        .name(name)
        .dataSource(db.dataSource())
        .schema(db.schema())
        .publisher(new RecordingPublisher())
        .slotName(slot)
        .publicationName("src_" + db.schema())
        .replicationConnection(db.jdbcUrl(), new Properties())
        .build();
  }
}

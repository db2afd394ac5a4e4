package dev.pgoutbox.relay;

import static dev.pgoutbox.relay.WalTestSupport.assertNoneLostOrReordered;
import static dev.pgoutbox.relay.WalTestSupport.pending;
import static dev.pgoutbox.relay.WalTestSupport.terminateReader;
import static dev.pgoutbox.relay.WalTestSupport.write;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.admin.OutboxAdmin;
import dev.pgoutbox.relay.micrometer.MicrometerRelayMetrics;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.relay.testing.TestWalRelays;
import dev.pgoutbox.relay.wal.WalRelay;
import dev.pgoutbox.testing.DeliveryChecker;
import dev.pgoutbox.testing.EmbeddedPostgresServer;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import dev.pgoutbox.testing.TestServer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The WAL relay's slot lost under it, on a PostgreSQL of the test's own (embedded, {@code
 * wal_level=logical}) whose {@code max_slot_wal_keep_size} keeps no WAL for a slot: invalidated
 * ({@code wal_status = lost}) while its reader is held in the middle of a batch, invalidated while
 * every relay is down, and dropped by an operator while events are in flight beside a standby
 * instance. Each time the relay says so (ERROR log, {@link RelayListener#onWalFallBack}, {@code
 * outbox_wal_fallen_back}, {@code outbox_wal_slot_lost} for an invalidated slot, a problem in
 * {@link OutboxAdmin#status()}), and delivers every pending event from the table: none lost, each
 * aggregate in order, judged by {@link DeliveryChecker} over (aggregate, seq).
 */
class WalSlotLossIT {

  /** The test's own server, started before the schema and stopped after it is dropped. */
  @RegisterExtension
  @org.junit.jupiter.api.Order(1)
  static final OwnServer server = new OwnServer();

  @RegisterExtension
  @org.junit.jupiter.api.Order(2)
  static final TestSchema db = TestSchema.migratedOn(() -> server, 8);

  private final List<WalRelay> relays = new ArrayList<>();
  private final List<String> fallBacks = new CopyOnWriteArrayList<>();
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

  @BeforeEach
  void freshOutbox() {
    db.execute("truncate outbox_events");
  }

  @AfterEach
  void stopAndDrop() {
    relays.forEach(r -> r.stop(Duration.ofSeconds(5)));
    for (String slot : List.of("held", "stopped", "operator")) {
      Eventually.await("slot " + slot + " dropped", () -> db.dropReplicationSlot(slot));
    }
  }

  @Test
  void aSlotInvalidatedWhileItsReaderIsHeldFallsBackAndDeliversEverythingInOrder()
      throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    WalRelay relay = start("held", publisher);
    Eventually.await("the reader attached", relay::isReading);
    Map<String, Integer> written = new HashMap<>(write(db, 3, 1, 1));
    Eventually.await("streamed", () -> publisher.delivered().size() == 3);

    publisher.closeGate();
    written.putAll(write(db, 3, 2, 2));
    assertThat(publisher.awaitEntered(30)).as("a batch reached the held publisher").isTrue();
    invalidate("held");
    written.putAll(write(db, 3, 4, 1)); // after the slot's end: only the table has them
    publisher.open();

    Eventually.await("the relay fell back", relay::hasFallenBack);
    assertThat(fallBacks).anyMatch(r -> r.contains("held") && r.contains("invalidated"));
    Eventually.await(
        "the gauges say so",
        () ->
            gauge("outbox.wal.fallen.back") == 1
                && gauge("outbox.wal.slot.lost") == 1
                && !relay.isReading());
    assertThat(admin().status().problems())
        .anyMatch(p -> p.contains("replication slot held is lost"));
    Eventually.await("everything delivered from the table", () -> pending(db) == 0);
    written.putAll(write(db, 3, 5, 2));
    Eventually.await("later events too", () -> pending(db) == 0);

    assertNoneLostOrReordered(written, publisher.deliveredPayloads());
  }

  @Test
  void aSlotInvalidatedWhileEveryRelayIsDownFallsBackAtTheNextStart() throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    WalRelay first = start("stopped", publisher);
    Eventually.await("the reader attached", first::isReading);
    Map<String, Integer> written = new HashMap<>(write(db, 2, 1, 2));
    Eventually.await("streamed", () -> pending(db) == 0);
    first.stop(Duration.ofSeconds(10));

    written.putAll(write(db, 2, 3, 3)); // nobody reads the slot
    invalidate("stopped");
    WalRelay again = start("stopped", publisher);
    assertThat(again.hasFallenBack()).as("the start sees wal_status = lost").isTrue();
    assertThat(fallBacks).anyMatch(r -> r.contains("stopped") && r.contains("invalidated"));
    Eventually.await("everything delivered from the table", () -> pending(db) == 0);
    written.putAll(write(db, 2, 6, 1));
    Eventually.await("later events too", () -> pending(db) == 0);

    assertNoneLostOrReordered(written, publisher.deliveredPayloads());
  }

  @Test
  void aSlotDroppedByAnOperatorWhileABatchIsInFlightFallsBackOnEveryInstance() throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    WalRelay one = start("operator", publisher);
    WalRelay two = start("operator", publisher);
    Eventually.await("one of them reads", () -> one.isReading() || two.isReading());
    Map<String, Integer> written = new HashMap<>(write(db, 3, 1, 1));
    Eventually.await("streamed", () -> publisher.delivered().size() == 3);

    publisher.closeGate();
    written.putAll(write(db, 3, 2, 2));
    assertThat(publisher.awaitEntered(30)).as("a batch reached the held publisher").isTrue();
    // As an operator would: end the WAL sender, then drop the slot before a reader attaches again.
    Eventually.await(
        "the slot dropped",
        () -> {
          terminateReader(db, "operator");
          return dropIfInactive("operator");
        });
    written.putAll(write(db, 3, 4, 2));
    publisher.open();

    Eventually.await("both instances fell back", () -> one.hasFallenBack() && two.hasFallenBack());
    assertThat(fallBacks).anyMatch(r -> r.contains("operator") && r.contains("dropped"));
    assertThat(gauge("outbox.wal.fallen.back")).isEqualTo(1);
    assertThat(admin().status().problems())
        .as("a slot the registered WAL relays read is missing")
        .anyMatch(p -> p.contains("replication slot operator") && p.contains("does not exist"));
    Eventually.await("everything delivered from the table", () -> pending(db) == 0);
    written.putAll(write(db, 3, 6, 1));
    Eventually.await("later events too", () -> pending(db) == 0);

    assertNoneLostOrReordered(written, publisher.deliveredPayloads());
  }

  /**
   * Writes WAL, switches segments and checkpoints until PostgreSQL invalidates {@code slot}: with
   * {@code max_slot_wal_keep_size} below a segment, a checkpoint removes every segment before the
   * current one, and with them the WAL the slot still needed.
   */
  private static void invalidate(String slot) {
    Eventually.await(
        "slot " + slot + " invalidated (wal_status = lost)",
        Duration.ofSeconds(120),
        () -> {
          db.execute("select pg_logical_emit_message(false, 'pgoutbox-test', repeat('x', 1000))");
          db.execute("select pg_switch_wal()");
          db.execute("checkpoint");
          return "lost"
              .equals(
                  db.queryString(
                      "select wal_status from pg_replication_slots where slot_name = '"
                          + slot
                          + "'"));
        });
  }

  /** Drops {@code slot} unless a reader streams it again already; true once it is gone. */
  private static boolean dropIfInactive(String slot) {
    try (Connection c = db.connect();
        PreparedStatement ps =
            c.prepareStatement(
                "select pg_drop_replication_slot(slot_name) from pg_replication_slots"
                    + " where slot_name = ? and not active")) {
      ps.setString(1, slot);
      ps.execute();
    } catch (SQLException e) {
      return false; // a reader attached in between: terminate it again
    }
    return db.queryLong(
            "select count(*) from pg_replication_slots where slot_name = '" + slot + "'")
        == 0;
  }

  private WalRelay start(String slot, RecordingPublisher publisher) {
    WalRelay relay =
        TestWalRelays.builder(db, slot, publisher)
            .config(
                RelayConfig.builder()
                    .batchSize(100)
                    .pollInterval(Duration.ofMillis(50))
                    .metricsRefreshInterval(Duration.ofMillis(100))
                    .build())
            .listener(
                RelayListener.composite(
                    List.of(
                        new MicrometerRelayMetrics(registry, "wal-" + slot),
                        new RelayListener() {
                          @Override
                          public void onWalFallBack(String slotName, String reason) {
                            fallBacks.add(slotName + ": " + reason);
                          }
                        })))
            .build();
    relays.add(relay);
    relay.start();
    return relay;
  }

  private double gauge(String name) {
    return registry.get(name).gauge().value();
  }

  private static OutboxAdmin admin() {
    return OutboxAdmin.builder().dataSource(db.dataSource()).schema(db.schema()).build();
  }

  /**
   * An embedded PostgreSQL for this class alone: logical decoding, and {@code
   * max_slot_wal_keep_size} of 1 MB (less than a segment: a slot keeps no WAL past a checkpoint).
   */
  static final class OwnServer implements BeforeAllCallback, AfterAllCallback, TestServer {
    private volatile EmbeddedPostgresServer postgres;

    @Override
    public void beforeAll(ExtensionContext context) {
      Map<String, String> settings = new HashMap<>(EmbeddedPostgresServer.LOGICAL_DECODING);
      settings.put("max_slot_wal_keep_size", "1MB");
      postgres = EmbeddedPostgresServer.start(settings);
    }

    @Override
    public void afterAll(ExtensionContext context) {
      if (postgres != null) {
        postgres.close();
      }
    }

    @Override
    public String jdbcUrl() {
      return postgres.jdbcUrl();
    }
  }
}

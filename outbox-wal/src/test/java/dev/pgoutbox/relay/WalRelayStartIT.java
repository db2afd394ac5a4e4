package dev.pgoutbox.relay;

import static dev.pgoutbox.relay.WalTestSupport.slotExists;
import static dev.pgoutbox.relay.WalTestSupport.slotStatsInto;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgoutbox.admin.OutboxAdmin;
import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.relay.testing.TestWalRelays;
import dev.pgoutbox.relay.wal.WalRelay;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * What {@link WalRelay#start()} checks and says: {@code wal_level} on the machine's PostgreSQL
 * (which runs with {@code replica}), the SQL to run when it may not create the slot, and the slot's
 * state in {@link OutboxAdmin#walSlot} and the listener once it runs.
 */
class WalRelayStartIT {

  @RegisterExtension static final TestSchema plain = TestSchema.migrated(2);

  @RegisterExtension static final TestSchema logical = TestSchema.migratedWithLogicalDecoding(4);

  @Test
  void aServerThatCannotDecodeIsRefusedWithHowToSetItUp() {
    String level = String.valueOf(plain.dsl().fetchValue("show wal_level"));
    WalRelay relay = relay(plain, "never_created", true, RelayListener.NONE);
    if ("logical".equals(level)) {
      relay.start(); // PGOUTBOX_TEST_JDBC_URL decodes: nothing to refuse
      relay.stop(Duration.ofSeconds(5));
      plain.execute("select pg_drop_replication_slot('never_created')");
      return;
    }
    assertThatThrownBy(relay::start)
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("needs wal_level = logical")
        .hasMessageContaining("wal_level = " + level)
        .hasMessageContaining("ALTER SYSTEM SET wal_level = logical");
  }

  @Test
  void anUnreachableDatabaseFailsTheStartWithAnOutboxException() {
    PGSimpleDataSource nowhere = new PGSimpleDataSource();
    nowhere.setUrl("jdbc:postgresql://127.0.0.1:1/test?connectTimeout=5");
    WalRelay relay =
        WalRelay.builder()
            .name("nowhere")
            .dataSource(nowhere)
            .publisher(new RecordingPublisher())
            .replicationConnection(nowhere.getUrl(), new Properties())
            .build();
    assertThatThrownBy(relay::start)
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("pgoutbox-relay[nowhere] - could not register in the relay registry");
    assertThat(relay.isRunning()).isFalse();
  }

  /**
   * PostgreSQL creates a logical slot only once every transaction that was running when it began
   * has ended. A transaction left open (a session idle in transaction, a long batch job) made the
   * first start wait for as long as it stayed open, on the host's start-up thread, saying nothing.
   */
  @Test
  void aTransactionLeftOpenFailsTheFirstStartNamingItInsteadOfHangingIt() throws Exception {
    try (Connection blocker = logical.connect()) {
      blocker.setAutoCommit(false);
      int pid = TestSchema.backendPid(blocker);
      try (Statement statement = blocker.createStatement()) {
        statement.execute("select pg_current_xact_id()"); // as a transaction that wrote
      }
      WalRelay relay = heldUpRelay("held_up");

      assertThatThrownBy(() -> startWithin(relay))
          .isInstanceOf(OutboxException.class)
          .hasMessageContaining("could not create replication slot held_up within PT1S")
          .hasMessageContaining("session pid " + pid)
          .hasMessageContaining("nothing was created");
      assertThat(slotExists(logical, "held_up")).isFalse();
      assertThat(relay.isRunning()).isFalse();
      blocker.commit();
    }
    WalRelay relay = heldUpRelay("held_up");
    startWithin(relay);
    assertThat(slotExists(logical, "held_up")).as("created once the transaction ended").isTrue();
    relay.stop(Duration.ofSeconds(5));
    Eventually.await("slot dropped", () -> logical.dropReplicationSlot("held_up"));
  }

  /** An in-doubt prepared transaction (a transaction manager that died between its phases). */
  @Test
  void anOrphanedPreparedTransactionFailsTheFirstStartNamingHowToEndIt() throws Exception {
    try (Connection orphan = logical.connect();
        Statement statement = orphan.createStatement()) {
      statement.execute("begin");
      statement.execute("set local pgoutbox.notify = off");
      statement.execute("select pg_current_xact_id()");
      statement.execute("prepare transaction 'start_it_orphan'");
    }
    try {
      WalRelay relay = heldUpRelay("orphaned");
      assertThatThrownBy(() -> startWithin(relay))
          .isInstanceOf(OutboxException.class)
          .hasMessageContaining("prepared transaction 'start_it_orphan'")
          .hasMessageContaining("ROLLBACK PREPARED");
      assertThat(slotExists(logical, "orphaned")).isFalse();
    } finally {
      logical.execute("rollback prepared 'start_it_orphan'");
    }
  }

  private static WalRelay heldUpRelay(String slot) {
    return builder(logical, slot, RelayListener.NONE)
        .slotCreationTimeout(Duration.ofSeconds(1))
        .build();
  }

  /** Starts {@code relay} on another thread and waits at most 60 s for it, failing if it hangs. */
  private static void startWithin(WalRelay relay) throws Exception {
    CompletableFuture<Void> start = CompletableFuture.runAsync(relay::start);
    try {
      start.get(60, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      throw (Exception) e.getCause();
    } catch (TimeoutException e) {
      throw new AssertionError("WalRelay.start() still waiting after 60 s", e);
    }
  }

  @Test
  void withoutCreateSlotAMissingSlotNamesTheSqlToRun() {
    WalRelay relay = relay(logical, "not_there", "manual_" + logical.schema(), false);
    assertThatThrownBy(relay::start)
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("publication manual_" + logical.schema() + " does not exist")
        .hasMessageContaining(
            "CREATE PUBLICATION manual_"
                + logical.schema()
                + " FOR TABLE "
                + logical.schema()
                + ".outbox_events WITH (publish = 'insert')");

    logical.execute(
        "CREATE PUBLICATION manual_"
            + logical.schema()
            + " FOR TABLE outbox_events WITH (publish = 'insert')");
    assertThatThrownBy(relay::start)
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("replication slot not_there does not exist")
        .hasMessageContaining("pg_create_logical_replication_slot('not_there', 'pgoutput')");
  }

  @Test
  void theSlotsLagIsReadForAdminsAndMetrics() throws Exception {
    List<WalSlotStats> heard = new CopyOnWriteArrayList<>();
    RelayListener listener = slotStatsInto(heard);
    WalRelay relay = relay(logical, "lagging", true, listener);
    try {
      relay.start();
      Eventually.await("the listener heard the slot", () -> !heard.isEmpty());
      assertThat(heard.get(0).slotName()).isEqualTo("lagging");
      assertThat(heard.get(0).lagBytes()).isNotNegative();
      assertThat(heard.get(0).lost()).isFalse();
    } finally {
      relay.stop(Duration.ofSeconds(5));
    }
    OutboxAdmin admin =
        OutboxAdmin.builder().dataSource(logical.dataSource()).schema(logical.schema()).build();
    // Written after the relay stopped: the slot is behind by at least these rows' WAL.
    logical.execute(
        "insert into outbox_events (aggregate_type, aggregate_id, event_type, payload)"
            + " select 'order', 'o-' || i, 'order.step', '{}' from generate_series(1, 100) i");
    WalSlotStats slot = admin.walSlot("lagging").orElseThrow();
    assertThat(slot.active()).isFalse();
    assertThat(slot.lagBytes()).isPositive();
    assertThat(slot.lagTime()).as("events wait for the slot with no reader attached").isPositive();
    assertThat(admin.walSlot("no_such_slot")).isEmpty();
    logical.execute("select pg_drop_replication_slot('lagging')");
  }

  private static WalRelay relay(TestSchema db, String slot, String publication, boolean create) {
    return builder(db, slot, RelayListener.NONE)
        .publicationName(publication)
        .createSlot(create)
        .build();
  }

  private static WalRelay relay(
      TestSchema db, String slot, boolean createSlot, RelayListener listener) {
    return builder(db, slot, listener).createSlot(createSlot).build();
  }

  private static WalRelay.Builder builder(TestSchema db, String slot, RelayListener listener) {
    return TestWalRelays.builder(db, slot, new RecordingPublisher())
        .name("start-" + slot)
        .listener(listener)
        .config(RelayConfig.builder().metricsRefreshInterval(Duration.ofMillis(100)).build());
  }
}

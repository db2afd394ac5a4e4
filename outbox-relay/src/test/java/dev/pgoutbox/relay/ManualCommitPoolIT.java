package dev.pgoutbox.relay;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.core.Inbox;
import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.internal.FleetRegistry;
import dev.pgoutbox.relay.internal.RelayLog;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.TestSchema;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The host's pool hands out connections with auto-commit off ({@code
 * spring.datasource.hikari.auto-commit=false}, a common setting with JPA): a statement run on such
 * a connection and not committed is rolled back when the connection goes back to the pool. Every
 * write pgoutbox makes on a host's pool must commit on its own: inbox retention, the relay's
 * batches and registry, the notify switch (the admin's actions: AdminManualCommitPoolIT in
 * pgoutbox-admin). Before this test, a relay's heartbeat and deregistration never landed.
 */
class ManualCommitPoolIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static HikariDataSource manualCommitPool;

  @BeforeAll
  static void setUp() {
    manualCommitPool = db.newManualCommitPool(6, "manual-commit");
  }

  @AfterAll
  static void close() {
    manualCommitPool.close();
  }

  @BeforeEach
  void empty() {
    db.execute("TRUNCATE outbox_events, processed_events, outbox_relays");
  }

  private static long count(String where) {
    return db.queryLong("SELECT count(*) FROM outbox_events WHERE " + where);
  }

  @Test
  void inboxRetentionDeletesWhatItReports() {
    db.execute(
        "INSERT INTO processed_events (consumer, event_id, processed_at)"
            + " SELECT 'billing', gen_random_uuid(), now() - interval '30 days'"
            + " FROM generate_series(1, 4)");
    Inbox inbox = Inbox.builder().schema(db.schema()).build();

    assertThat(inbox.purgeProcessed(manualCommitPool, Duration.ofDays(14), 3)).isEqualTo(4);
    assertThat(db.queryLong("SELECT count(*) FROM processed_events")).isZero();
  }

  @Test
  void theRelayPublishesAndMarksAndADeadLetterIsRecorded() throws Exception {
    EventRows.insert(db.dsl(), "a", 1);
    EventRows.insert(db.dsl(), "a", 2);
    UUID poison = EventRows.insert(db.dsl(), "p", 1);
    RecordingPublisher publisher =
        new RecordingPublisher()
            .decide(
                m ->
                    m.id().equals(poison)
                        ? PublishResult.permanent("refused")
                        : PublishResult.published());
    OutboxRelay relay =
        OutboxRelay.builder()
            .name("manual-commit")
            .dataSource(manualCommitPool)
            .schema(db.schema())
            .publisher(publisher)
            .config(RelayConfig.builder().listenForNotifications(false).build())
            .build();

    assertThat(relay.runOnce()).isEqualTo(3);

    assertThat(count("processed_at IS NOT NULL")).as("published and marked").isEqualTo(2);
    assertThat(count("dead_at IS NOT NULL AND id = '" + poison + "'")).isEqualTo(1);
    assertThat(relay.runOnce()).as("nothing left to claim").isZero();
  }

  @Test
  void theFleetRegistryBeatsAndDeregisters() {
    FleetRegistry registry =
        new FleetRegistry(
            manualCommitPool,
            OutboxSchema.jooqSettings(db.schema()),
            db.schema(),
            "manual-commit",
            Ordering.STRICT,
            DeadLetterPolicy.HOLD_AGGREGATE,
            FleetRegistry.TABLE_SOURCE);
    registry.register();
    db.execute("UPDATE outbox_relays SET heartbeat_at = now() - interval '20 seconds'");

    AtomicBoolean stopped = new AtomicBoolean();
    registry.heartbeat(new RelayLog("manual-commit"), () -> stopped.set(true));

    assertThat(
            db.queryLong(
                "SELECT count(*) FROM outbox_relays"
                    + " WHERE heartbeat_at > now() - interval '10 seconds'"))
        .as("the beat landed")
        .isEqualTo(1);
    assertThat(stopped).as("the beat found its own row").isFalse();
    registry.deregister();
    assertThat(db.queryLong("SELECT count(*) FROM outbox_relays")).as("deregistered").isZero();
  }

  @Test
  void theNotifySwitchTakesEffect() {
    String enabled =
        "SELECT tgenabled <> 'D' FROM pg_trigger WHERE tgname = '"
            + OutboxSchema.NOTIFY_TRIGGER
            + "' AND tgrelid = '"
            + db.schema()
            + ".outbox_events'::regclass";
    try {
      OutboxSchema.setNotifyTrigger(manualCommitPool, db.schema(), false);
      assertThat(db.queryString(enabled)).isEqualTo("f");
    } finally {
      OutboxSchema.setNotifyTrigger(manualCommitPool, db.schema(), true);
    }
    assertThat(db.queryString(enabled)).isEqualTo("t");
  }
}

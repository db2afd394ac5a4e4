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
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The host's pool hands out connections with auto-commit off ({@code
 * spring.datasource.hikari.auto-commit=false}, a common setting with JPA): a statement run on such
 * a connection and not committed is rolled back when the connection goes back to the pool. Every
 * write pgoutbox makes on a host's pool must commit on its own: admin actions, retention, the
 * relay's batches and registry, the notify switch. Before this test, admin retries, discards and
 * retention reported success and changed nothing (retention then looped for ever, deleting the same
 * rows again), and a relay's heartbeat and deregistration never landed.
 */
class ManualCommitPoolIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static HikariDataSource manualCommitPool;
  private static OutboxAdmin admin;

  @BeforeAll
  static void setUp() {
    manualCommitPool = db.newManualCommitPool(6, "manual-commit");
    admin = OutboxAdmin.builder().dataSource(manualCommitPool).schema(db.schema()).build();
  }

  @AfterAll
  static void close() {
    manualCommitPool.close();
  }

  @BeforeEach
  void empty() {
    db.execute("TRUNCATE outbox_events, processed_events, outbox_relays");
  }

  private static void kill(UUID id) {
    db.execute(
        "UPDATE outbox_events SET dead_at = now(), attempts = 10, last_error = 'boom' WHERE id = '"
            + id
            + "'");
  }

  private static long count(String where) {
    return db.queryLong("SELECT count(*) FROM outbox_events WHERE " + where);
  }

  @Test
  void adminRetriesAndDiscardsTakeEffect() {
    UUID one = EventRows.insert(db.dsl(), "a", 1);
    UUID ofAggregate = EventRows.insert(db.dsl(), "b", 1);
    UUID ofType = EventRows.insert(db.dsl(), "c", 1);
    UUID discarded = EventRows.insert(db.dsl(), "d", 1);
    for (UUID id : new UUID[] {one, ofAggregate, ofType, discarded}) {
      kill(id);
    }
    db.execute("UPDATE outbox_events SET event_type = 'only.c' WHERE id = '" + ofType + "'");

    assertThat(admin.retry(one)).isTrue();
    assertThat(admin.retryAggregate("order", "b")).isEqualTo(1);
    assertThat(admin.retryEventType("only.c")).isEqualTo(1);
    assertThat(admin.discard(discarded)).isTrue();

    assertThat(count("dead_at IS NULL AND attempts = 0")).as("retried, as reported").isEqualTo(3);
    assertThat(count("id = '" + discarded + "'")).as("discarded, as reported").isZero();
    assertThat(admin.deadLetterCount()).isZero();
  }

  @Test
  @Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD) // it used to loop for ever
  void retentionDeletesWhatItReports() {
    for (int i = 1; i <= 5; i++) {
      EventRows.insert(db.dsl(), "a", i);
    }
    db.execute("UPDATE outbox_events SET processed_at = now() - interval '2 hours'");

    assertThat(admin.purgeProcessed(Duration.ofHours(1), 2)).isEqualTo(5);
    assertThat(count("true")).isZero();
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

package dev.pgoutbox.relay;

import static dev.pgoutbox.relay.WalTestSupport.urlAs;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.admin.OutboxAdmin;
import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.db.OutboxRoles;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.relay.wal.WalRelay;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A {@link WalRelay} under a role holding exactly the recipe of docs/wal-relay.md ("Privileges"):
 * {@code LOGIN}, the relay grants with {@code UPDATE} of the six delivery columns only, and what
 * {@link OutboxRoles#grantWalRelay} adds ({@code REPLICATION}, the publication made by the owner).
 * It creates its slot, parks and drains the backlog, streams, retries, dead-letters and discards;
 * it is refused writing events, changing what an event says and creating publications. A role
 * without {@code REPLICATION} fails the start saying so.
 */
class WalLeastPrivilegeIT {

  @RegisterExtension static final TestSchema db = TestSchema.migratedWithLogicalDecoding(4);

  private static final String PASSWORD = "pgoutbox-wal-least-privilege";
  private static final String DENIED = "42501";

  private static String walRole;
  private static String plainRole;
  private static final List<HikariDataSource> pools = new ArrayList<>();

  @BeforeAll
  static void createRoles() {
    // Role names are cluster-wide: derive them from this run's unique schema name.
    walRole = db.schema() + "_wal";
    plainRole = db.schema() + "_norepl";
    for (String role : List.of(walRole, plainRole)) {
      db.execute("CREATE ROLE " + role + " LOGIN PASSWORD '" + PASSWORD + "'");
      grantRelay(role);
    }
    OutboxRoles.grantWalRelay(db.dataSource(), db.schema(), walRole, publication());
  }

  /** The relay grants, UPDATE by column: what grants.sql gives the relay role. */
  private static void grantRelay(String role) {
    String s = db.schema();
    db.execute("GRANT USAGE ON SCHEMA " + s + " TO " + role);
    db.execute("GRANT SELECT, DELETE ON TABLE " + s + ".outbox_events TO " + role);
    db.execute(
        "GRANT UPDATE (attempts, retry_after, last_error, error_history, processed_at, dead_at,"
            + " parked, commit_lsn)"
            + " ON TABLE "
            + s
            + ".outbox_events TO "
            + role);
    db.execute("GRANT SELECT ON TABLE " + s + ".outbox_dead_letters TO " + role);
    db.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE " + s + ".outbox_relays TO " + role);
  }

  @AfterAll
  static void dropRoles() {
    pools.forEach(HikariDataSource::close);
    for (String role : new String[] {walRole, plainRole}) {
      if (role != null) {
        db.dropReplicationSlot(role + "_slot");
        db.execute("DROP PUBLICATION IF EXISTS " + publication());
        db.execute("DROP OWNED BY " + role);
        db.execute("DROP ROLE " + role);
      }
    }
  }

  private static String publication() {
    return "pub_" + db.schema();
  }

  private static HikariDataSource poolAs(String role) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(urlAs(db, role, PASSWORD));
    config.setMaximumPoolSize(4);
    config.setMinimumIdle(0);
    config.setPoolName("wal-least-privilege-" + role);
    HikariDataSource pool = new HikariDataSource(config);
    pools.add(pool);
    return pool;
  }

  private static WalRelay.Builder relayAs(String role, HikariDataSource pool, Publisher publisher) {
    return WalRelay.builder()
        .name("least-" + role)
        .dataSource(pool)
        .schema(db.schema())
        .publisher(publisher)
        .slotName(role + "_slot")
        .publicationName(publication())
        .attachRetryInterval(Duration.ofMillis(200))
        .replicationConnection(urlAs(db, role, PASSWORD), new Properties())
        .config(
            RelayConfig.builder()
                .pollInterval(Duration.ofMillis(50))
                .maxAttempts(1_000)
                .exponentialBackoff(Duration.ofMillis(50), 1.0, 0.0, Duration.ofMillis(50))
                .build());
  }

  private static UUID append(String aggregateId) {
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    return db.dsl()
        .transactionResult(
            tx ->
                outbox.append(
                    tx.dsl(), OutboxEvent.of("order", aggregateId, "order.created", Map.of())));
  }

  private static String sqlStateOf(HikariDataSource pool, String sql) {
    try (Connection connection = pool.getConnection();
        Statement statement = connection.createStatement()) {
      statement.execute(sql);
      return "ok";
    } catch (SQLException e) {
      return e.getSQLState();
    }
  }

  private static long count(String where) {
    return db.queryLong("select count(*) from outbox_events where " + where);
  }

  @Test
  void walRelayDeliversParksRetriesAndDeadLettersUnderTheRecipeAlone() throws Exception {
    HikariDataSource pool = poolAs(walRole);
    UUID backlog = append("backlog"); // older than the slot: parked, the drainer's
    AtomicBoolean refusing = new AtomicBoolean(true);
    RecordingPublisher publisher =
        new RecordingPublisher()
            .decide(
                m ->
                    switch (m.aggregateId()) {
                      case "retried" ->
                          refusing.get()
                              ? PublishResult.retryable("broker says not yet")
                              : PublishResult.published();
                      case "dead" -> PublishResult.permanent("unknown event_type");
                      default -> PublishResult.published();
                    });
    WalRelay relay = relayAs(walRole, pool, publisher).build();
    try {
      relay.start();
      UUID streamed = append("streamed");
      UUID retried = append("retried");
      UUID dead = append("dead");
      Eventually.await(
          "the retried event failed at least once, its attempt recorded",
          () -> count("id = '" + retried + "' and attempts > 0 and last_error is not null") == 1);
      refusing.set(false);
      Eventually.await(
          "backlog, streamed and retried published (and deleted: the WAL relay's default"
              + " completion, under the recipe's DELETE grant), dead dead-lettered",
          () -> count("true") == 1 && count("dead_at is not null") == 1);
      assertThat(publisher.delivered())
          .extracting(OutboxMessage::id)
          .contains(backlog, streamed, retried);
      assertThat(count("id = '" + dead + "' and dead_at is not null")).isOne();

      OutboxAdmin admin = OutboxAdmin.builder().dataSource(pool).schema(db.schema()).build();
      assertThat(admin.walSlot(walRole + "_slot")).isPresent();
      assertThat(admin.discard(dead)).as("DELETE: discarding a dead letter").isTrue();
      assertThat(admin.purgeProcessed(Duration.ZERO, 100))
          .as("the WAL relay deleted what it delivered: no history to purge")
          .isZero();
    } finally {
      relay.stop(Duration.ofSeconds(10));
    }

    String s = db.schema();
    assertThat(
            sqlStateOf(
                pool,
                "insert into "
                    + s
                    + ".outbox_events (aggregate_type, aggregate_id, event_type, payload)"
                    + " values ('order', 'forged', 'order.created', '{}')"))
        .as("the WAL relay writes no events")
        .isEqualTo(DENIED);
    append("kept");
    for (String column :
        List.of(
            "payload = '{\"forged\": true}'",
            "headers = '{}'",
            "event_type = 'x'",
            "aggregate_type = 'x'",
            "aggregate_id = 'x'",
            "created_at = now()")) {
      assertThat(sqlStateOf(pool, "update " + s + ".outbox_events set " + column))
          .as("update " + column)
          .isEqualTo(DENIED);
    }
    assertThat(sqlStateOf(pool, "truncate " + s + ".outbox_events")).isEqualTo(DENIED);
    assertThat(
            sqlStateOf(
                pool,
                "create publication "
                    + s
                    + "_sneaky for table "
                    + s
                    + ".outbox_events with (publish = 'insert, update')"))
        .as("only the table's owner makes publications")
        .isEqualTo(DENIED);
    assertThat(db.queryString("select payload::text from outbox_events")).isEqualTo("{}");
  }

  @Test
  void aRoleWithoutReplicationFailsTheStartNamingTheAttribute() {
    HikariDataSource pool = poolAs(plainRole);
    WalRelay relay = relayAs(plainRole, pool, new RecordingPublisher()).build();
    assertThatThrownBy(relay::start)
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("could not create replication slot " + plainRole + "_slot")
        .hasMessageContaining("REPLICATION attribute (ALTER ROLE <role> REPLICATION)");
    assertThat(relay.isRunning()).isFalse();
    assertThat(
            db.queryLong(
                "select count(*) from pg_replication_slots where slot_name = '"
                    + plainRole
                    + "_slot'"))
        .isZero();
  }

  @Test
  void grantWalRelayIsIdempotentAndRefusesAPublicationWithoutTheTable() {
    assertThat(OutboxRoles.walRelayGrantStatements("outbox", "orders_relay", "pgoutbox_outbox"))
        .containsExactly(
            "ALTER ROLE \"orders_relay\" REPLICATION",
            "CREATE PUBLICATION \"pgoutbox_outbox\" FOR TABLE \"outbox\".outbox_events"
                + " WITH (publish = 'insert')");
    OutboxRoles.grantWalRelay(db.dataSource(), db.schema(), walRole, publication());
    assertThat(
            db.queryLong(
                "select count(*) from pg_publication_tables where pubname = '"
                    + publication()
                    + "'"))
        .isOne();
    String other = db.schema() + "_empty_pub";
    db.execute("CREATE PUBLICATION " + other);
    try {
      assertThatThrownBy(
              () -> OutboxRoles.grantWalRelay(db.dataSource(), db.schema(), walRole, other))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("publication " + other + " exists but does not include")
          .hasMessageContaining("ALTER PUBLICATION " + other + " ADD TABLE");
    } finally {
      db.execute("DROP PUBLICATION " + other);
    }
    assertThatThrownBy(
            () ->
                OutboxRoles.grantWalRelay(
                    db.dataSource(), db.schema(), "r\"; drop table x; --", publication()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("relayRole must be a plain identifier");
  }
}

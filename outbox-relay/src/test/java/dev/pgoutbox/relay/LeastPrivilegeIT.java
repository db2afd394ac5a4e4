package dev.pgoutbox.relay;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.core.Inbox;
import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.db.OutboxRoles;
import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.internal.StatsReader;
import dev.pgoutbox.relay.testing.DeadRows;
import dev.pgoutbox.relay.testing.LeastPrivilegeRoles;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The writer, the relay and the inbox each work under a role that holds only the privileges of
 * {@code db/pgoutbox/roles/grants.sql}, and each role is refused what it does not need.
 */
class LeastPrivilegeIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated(4);

  private static LeastPrivilegeRoles roles;
  private static String writerRole;
  private static String relayRole;
  private static String consumerRole;
  private static HikariDataSource writerPool;
  private static HikariDataSource relayPool;
  private static HikariDataSource consumerPool;

  @BeforeAll
  static void createRoles() {
    roles = LeastPrivilegeRoles.grant(db, "pgoutbox-least-privilege");
    writerRole = roles.writer();
    relayRole = roles.relay();
    consumerRole = roles.consumer();
    writerPool = poolAs(writerRole);
    relayPool = poolAs(relayRole);
    consumerPool = poolAs(consumerRole);
  }

  @AfterAll
  static void dropRoles() {
    if (roles != null) {
      roles.close();
    }
  }

  @BeforeEach
  void emptyTables() {
    db.execute("TRUNCATE outbox_events, processed_events");
  }

  /** The test database's URL, logging in as {@code role} instead of the test's superuser. */
  private static String urlAs(String role) {
    return roles.urlAs(role);
  }

  private static HikariDataSource poolAs(String role) {
    return roles.poolAs(role, 3, "least-privilege-" + role);
  }

  private static DSLContext dsl(HikariDataSource pool) {
    return DSL.using(pool, SQLDialect.POSTGRES);
  }

  private static UUID appendAsWriter(Outbox outbox, String aggregateId, int seq) {
    return dsl(writerPool)
        .transactionResult(
            tx ->
                outbox.append(
                    tx.dsl(),
                    OutboxEvent.of("order", aggregateId, "order.created", Map.of("seq", seq))));
  }

  /** Runs {@code sql} as the pool's role and returns PostgreSQL's SQLSTATE, or "ok". */
  private static String sqlStateOf(HikariDataSource pool, String sql) {
    try (Connection connection = pool.getConnection();
        Statement statement = connection.createStatement()) {
      statement.execute(sql);
      return "ok";
    } catch (SQLException e) {
      return e.getSQLState();
    }
  }

  private static final String DENIED = "42501";

  @Test
  void writerAppendsWithIdentityAdvisoryLocksAndNotifyTriggerOnInsertAlone() {
    // Not even EXECUTE on the notify trigger's function: PostgreSQL does not check it when a
    // trigger fires (PUBLIC has it by default; a hardened database may have revoked it).
    db.execute("REVOKE EXECUTE ON FUNCTION " + db.schema() + ".pgoutbox_notify() FROM PUBLIC");
    Outbox outbox = Outbox.builder().schema(db.schema()).serializeWritersPerAggregate(true).build();

    UUID one = appendAsWriter(outbox, "1", 1);
    List<UUID> batch =
        dsl(writerPool)
            .transactionResult(
                tx ->
                    outbox.appendAll(
                        tx.dsl(),
                        List.of(
                            OutboxEvent.of("order", "2", "order.created", Map.of("seq", 1)),
                            OutboxEvent.of("order", "1", "order.paid", Map.of("seq", 2)))));

    assertThat(db.queryLong("select count(*) from outbox_events")).isEqualTo(3);
    assertThat(
            db.queryLong(
                "select count(*) from outbox_events where id in ('"
                    + one
                    + "', '"
                    + batch.get(0)
                    + "', '"
                    + batch.get(1)
                    + "') and position is not null"))
        .isEqualTo(3);
  }

  @Test
  void writerCannotReadChangeOrDeleteEventsNorTouchTheInbox() {
    appendAsWriter(Outbox.builder().schema(db.schema()).build(), "1", 1);
    String s = db.schema();

    assertThat(sqlStateOf(writerPool, "select * from " + s + ".outbox_events")).isEqualTo(DENIED);
    assertThat(sqlStateOf(writerPool, "select count(*) from " + s + ".outbox_dead_letters"))
        .isEqualTo(DENIED);
    assertThat(sqlStateOf(writerPool, "update " + s + ".outbox_events set attempts = 0"))
        .isEqualTo(DENIED);
    assertThat(sqlStateOf(writerPool, "update " + s + ".outbox_events set processed_at = now()"))
        .isEqualTo(DENIED);
    assertThat(sqlStateOf(writerPool, "delete from " + s + ".outbox_events")).isEqualTo(DENIED);
    assertThat(sqlStateOf(writerPool, "truncate " + s + ".outbox_events")).isEqualTo(DENIED);
    assertThat(sqlStateOf(writerPool, "select * from " + s + ".processed_events"))
        .isEqualTo(DENIED);
    assertThat(
            sqlStateOf(
                writerPool,
                "insert into "
                    + s
                    + ".processed_events (consumer, event_id)"
                    + " values ('c', gen_random_uuid())"))
        .isEqualTo(DENIED);
    assertThat(sqlStateOf(writerPool, "create table " + s + ".sneaky (id int)")).isEqualTo(DENIED);
    assertThat(db.queryLong("select count(*) from outbox_events where processed_at is null"))
        .isEqualTo(1);
  }

  @Test
  void writerCannotInsertRowsThatAreNotNew() {
    String s = db.schema();
    String columns = "aggregate_type, aggregate_id, event_type, payload";
    String values = "'order', 'forged', 'order.created', '{}'";
    for (String forged :
        List.of(
            "processed_at = now()",
            "dead_at = now()",
            "attempts = 7",
            "retry_after = 'infinity'",
            "last_error = 'forged'",
            "parked = true",
            "created_at = '2000-01-01'")) {
      String column = forged.substring(0, forged.indexOf(' '));
      String value = forged.substring(forged.indexOf('=') + 2);
      assertThat(
              sqlStateOf(
                  writerPool,
                  "insert into "
                      + s
                      + ".outbox_events ("
                      + columns
                      + ", "
                      + column
                      + ") values ("
                      + values
                      + ", "
                      + value
                      + ")"))
          .as("a writer inserting %s", forged)
          .isEqualTo(DENIED);
    }
    assertThat(
            sqlStateOf(
                writerPool,
                "insert into " + s + ".outbox_events (" + columns + ") values (" + values + ")"))
        .as("the columns the writer fills")
        .isEqualTo("ok");
    assertThat(db.queryLong("select count(*) from outbox_events")).isEqualTo(1);
    assertThat(
            db.queryLong(
                "select count(*) from outbox_events where attempts = 0 and processed_at is null"
                    + " and dead_at is null and retry_after is null and last_error is null"
                    + " and not parked"))
        .isEqualTo(1);
  }

  @Test
  void relayCannotRewriteAnEvent() {
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    appendAsWriter(outbox, "1", 1);
    String s = db.schema();
    for (String rewrite :
        List.of(
            "payload = '{\"forged\": true}'",
            "headers = '{}'",
            "event_type = 'order.refunded'",
            "aggregate_type = 'invoice'",
            "aggregate_id = '2'",
            "id = gen_random_uuid()",
            "created_at = now()")) {
      assertThat(sqlStateOf(relayPool, "update " + s + ".outbox_events set " + rewrite))
          .as("the relay setting %s", rewrite)
          .isEqualTo(DENIED);
    }
    assertThat(
            sqlStateOf(
                relayPool,
                "update "
                    + s
                    + ".outbox_events set attempts = attempts, retry_after = null,"
                    + " last_error = null, processed_at = null, dead_at = null, parked = false"))
        .as("the delivery columns")
        .isEqualTo("ok");
    assertThat(sqlStateOf(relayPool, "update " + s + ".outbox_events set retry_after = 'infinity'"))
        .as("a head that would never be due again")
        .isEqualTo("23514");
  }

  @Test
  void relayRunsOnceAndAdministersUnderItsRole() throws Exception {
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    UUID first = appendAsWriter(outbox, "1", 1);
    UUID second = appendAsWriter(outbox, "2", 1);
    RecordingPublisher publisher =
        new RecordingPublisher()
            .decide(
                m ->
                    m.id().equals(second)
                        ? PublishResult.permanent("unknown event_type")
                        : PublishResult.published());
    OutboxRelay relay =
        OutboxRelay.builder()
            .name("least-privilege")
            .dataSource(relayPool)
            .schema(db.schema())
            .publisher(publisher)
            .config(RelayConfig.builder().listenForNotifications(false).build())
            .build();

    assertThat(relay.runOnce()).isEqualTo(2);

    assertThat(publisher.delivered()).extracting(OutboxMessage::id).containsExactly(first);
    // The relay's stats, and an operator's reads and writes, as the relay's role.
    StatsReader reader = StatsReader.on(relayPool, db.schema());
    OutboxStats stats = reader.stats();
    assertThat(stats.deadLetters()).isEqualTo(1);
    DSLContext asRelay =
        DSL.using(relayPool, SQLDialect.POSTGRES, OutboxSchema.jooqSettings(db.schema()));
    assertThat(DeadRows.list(asRelay)).extracting(DeadRows.Dead::id).containsExactly(second);
    assertThat(reader.oldestTransactionAge()).isGreaterThanOrEqualTo(Duration.ZERO);
    assertThat(DeadRows.retry(asRelay, second)).isTrue();
    assertThat(relay.runOnce()).as("the retried event fails permanently again").isEqualTo(1);
    assertThat(asRelay.deleteFrom(OUTBOX_EVENTS).where(OUTBOX_EVENTS.ID.eq(second)).execute())
        .isEqualTo(1);
    assertThat(
            asRelay
                .deleteFrom(OUTBOX_EVENTS)
                .where(OUTBOX_EVENTS.PROCESSED_AT.isNotNull())
                .execute())
        .isEqualTo(1);
    assertThat(db.queryLong("select count(*) from outbox_events")).isZero();

    String s = db.schema();
    assertThat(
            sqlStateOf(
                relayPool,
                "insert into "
                    + s
                    + ".outbox_events (aggregate_type, aggregate_id, event_type,"
                    + " payload) values ('a', '1', 't', '{}')"))
        .as("the relay writes no events")
        .isEqualTo(DENIED);
    assertThat(sqlStateOf(relayPool, "select * from " + s + ".processed_events")).isEqualTo(DENIED);
  }

  @Test
  void startedRelayWakesOnNotifyUnderItsRole() throws Exception {
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    RecordingPublisher publisher = new RecordingPublisher();
    try (OutboxRelay relay =
        OutboxRelay.builder()
            .name("least-privilege-listen")
            .dataSource(relayPool)
            .schema(db.schema())
            .publisher(publisher)
            // A poll far beyond the wait below: only a notification can deliver in time.
            .config(RelayConfig.builder().pollInterval(Duration.ofMinutes(5)).build())
            .build()) {
      relay.start();
      assertThat(
              Eventually.holdsWithin(
                  () -> db.listeningSessions("usename = '" + relayRole + "'") == 1, 20))
          .as("the relay's role LISTENs")
          .isTrue();

      UUID id = appendAsWriter(outbox, "1", 1);

      assertThat(Eventually.holdsWithin(() -> publisher.delivered().size() == 1, 20)).isTrue();
      assertThat(publisher.delivered().get(0).id()).isEqualTo(id);
      assertThat(
              Eventually.holdsWithin(
                  () ->
                      db.queryLong(
                              "select count(*) from outbox_events where processed_at is not null")
                          == 1,
                  20))
          .isTrue();
    }
  }

  @Test
  void inboxHandlesOncePurgesAndReadsNoEvents() {
    Inbox inbox = Inbox.builder().schema(db.schema()).build();
    UUID eventId = UUID.randomUUID();
    AtomicInteger handled = new AtomicInteger();

    for (int delivery = 0; delivery < 2; delivery++) {
      dsl(consumerPool)
          .transaction(
              tx -> inbox.handleOnce(tx.dsl(), "shipping", eventId, handled::incrementAndGet));
    }

    assertThat(handled).hasValue(1);
    assertThat(inbox.purgeProcessed(consumerPool, Duration.ZERO, 10)).isEqualTo(1);
    assertThat(db.queryLong("select count(*) from processed_events")).isZero();
    String s = db.schema();
    assertThat(sqlStateOf(consumerPool, "select * from " + s + ".outbox_events")).isEqualTo(DENIED);
    assertThat(sqlStateOf(consumerPool, "update " + s + ".processed_events set consumer = 'x'"))
        .isEqualTo(DENIED);
  }

  @Test
  void aRoleUsedForTheWrongJobFailsWithPermissionDeniedNamingTheTable() {
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    OutboxRelay relayAsWriter =
        OutboxRelay.builder()
            .name("wrong-role")
            .dataSource(writerPool)
            .schema(db.schema())
            .publisher(new RecordingPublisher())
            .config(RelayConfig.builder().listenForNotifications(false).build())
            .build();

    assertThatThrownBy(relayAsWriter::runOnce)
        .isInstanceOf(OutboxException.class)
        .hasMessageStartingWith("pgoutbox-relay[wrong-role] batch failed and was rolled back")
        .hasMessageContaining("permission denied for table outbox_events");
    assertThatThrownBy(
            () ->
                dsl(consumerPool)
                    .transaction(
                        tx ->
                            outbox.append(
                                tx.dsl(), OutboxEvent.of("order", "1", "order.created", Map.of()))))
        .isInstanceOf(OutboxException.class)
        .hasMessageStartingWith("Could not append event ")
        .hasMessageContaining(db.schema() + ".outbox_events")
        .hasMessageContaining("permission denied for table outbox_events");
    Inbox inbox = Inbox.builder().schema(db.schema()).build();
    assertThatThrownBy(
            () ->
                dsl(writerPool)
                    .transaction(
                        tx -> inbox.handleOnce(tx.dsl(), "shipping", UUID.randomUUID(), () -> {})))
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining(db.schema() + ".processed_events")
        .hasMessageContaining("permission denied for table processed_events");
    assertThat(db.queryLong("select count(*) from outbox_events")).isZero();
  }

  @Test
  void grantsAreIdempotentAndRefuseNamesThatAreNotIdentifiers() {
    OutboxRoles.grant(db.dataSource(), db.schema(), writerRole, relayRole, consumerRole);

    assertThatThrownBy(
            () ->
                OutboxRoles.grant(
                    db.dataSource(),
                    db.schema(),
                    writerRole,
                    "r\"; drop table x; --",
                    consumerRole))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("relayRole must be a plain identifier");
    assertThatThrownBy(
            () ->
                OutboxRoles.grant(
                    db.dataSource(),
                    db.schema(),
                    "no_such_role_" + db.schema(),
                    relayRole,
                    consumerRole))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("does not exist");
  }
}

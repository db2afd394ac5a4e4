package dev.pgoutbox.relay;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.db.OutboxRoles;
import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A role that may only connect holds every advisory lock on the writers' commit path that it can
 * compute (the notify trigger's two keys of the outbox's channel, exclusively), and writers go on
 * committing without waiting for it; a started relay still delivers every event. With {@link
 * OutboxRoles#restrictAdvisoryLocks} applied to the database, the same role cannot take any
 * advisory lock at all, while the outbox's own roles work.
 */
class HostileLocksIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated(4);

  private static final String PASSWORD = "pgoutbox-hostile-locks";
  private static String hostileRole;
  private static Connection hostile;

  @BeforeAll
  static void createHostileRole() throws SQLException {
    hostileRole = db.schema() + "_locker";
    db.execute("CREATE ROLE " + hostileRole + " LOGIN PASSWORD '" + PASSWORD + "'");
    hostile = DriverManager.getConnection(urlAs(db.jdbcUrl(), hostileRole));
  }

  @AfterAll
  static void dropHostileRole() throws SQLException {
    if (hostile != null) {
      hostile.close();
    }
    if (hostileRole != null) {
      db.execute("DROP ROLE IF EXISTS " + hostileRole);
    }
  }

  private static String urlAs(String url, String role) {
    String bare =
        url.replaceAll("([?&])(user|password)=[^&]*", "$1")
            .replaceAll("&&+", "&")
            .replace("?&", "?");
    return bare
        + (bare.endsWith("&") || bare.endsWith("?") ? "" : "&")
        + "user="
        + role
        + "&password="
        + PASSWORD;
  }

  /** Takes, on the hostile session, the lock {@code (hashtext(channel), key)} exclusively. */
  private static void holdChannelLock(Connection session, int key) throws SQLException {
    try (PreparedStatement statement =
        session.prepareStatement("select pg_advisory_lock(hashtext(?), ?)")) {
      statement.setString(1, OutboxSchema.notifyChannel(db.schema()));
      statement.setInt(2, key);
      statement.execute();
    }
  }

  @Test
  void writersCommitWhileAnotherRoleHoldsTheTriggersLocksAndTheRelayDeliversEverything()
      throws Exception {
    holdChannelLock(hostile, 1);
    holdChannelLock(hostile, 2);
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    RecordingPublisher publisher = new RecordingPublisher();
    ExecutorService writers = Executors.newFixedThreadPool(4);
    try (HikariDataSource pool = db.newPool(4);
        OutboxRelay relay =
            OutboxRelay.builder()
                .name("hostile-locks")
                .dataSource(db.dataSource())
                .schema(db.schema())
                .publisher(publisher)
                .config(RelayConfig.builder().pollInterval(Duration.ofMillis(200)).build())
                .build()) {
      relay.start();
      List<Future<?>> commits = new ArrayList<>();
      for (int w = 0; w < 4; w++) {
        int writer = w;
        commits.add(
            writers.submit(
                () -> {
                  for (int i = 0; i < 50; i++) {
                    int seq = i;
                    DSL.using(pool, SQLDialect.POSTGRES)
                        .transaction(
                            tx ->
                                outbox.append(
                                    tx.dsl(),
                                    OutboxEvent.of(
                                        "order",
                                        "w" + writer,
                                        "order.created",
                                        Map.of("seq", seq))));
                  }
                  return null;
                }));
      }
      // Before the trigger only tried its lock, the first commit waited here until the hostile
      // session let go, which it never does within this test.
      for (Future<?> commit : commits) {
        commit.get(60, TimeUnit.SECONDS);
      }
      assertThat(
              db.queryLong(
                  "select count(*) from pg_locks where locktype = 'advisory' and not granted"))
          .as("sessions waiting for an advisory lock")
          .isZero();
      Eventually.await("every event delivered", () -> publisher.delivered().size() == 200);
      for (int w = 0; w < 4; w++) {
        String aggregate = "w" + w;
        List<String> payloads =
            publisher.delivered().stream()
                .filter(m -> m.aggregateId().equals(aggregate))
                .map(OutboxMessage::payload)
                .toList();
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
          expected.add("{\"seq\": " + i + "}");
        }
        assertThat(payloads).as("aggregate %s in order", aggregate).isEqualTo(expected);
      }
    } finally {
      writers.shutdownNow();
      try (Statement statement = hostile.createStatement()) {
        statement.execute("select pg_advisory_unlock_all()");
      }
    }
  }

  @Test
  void restrictedAdvisoryLocksAreRefusedToOtherRolesAndGrantedToTheOutboxRoles()
      throws SQLException {
    // Function privileges belong to one database: restrict a database of this test's own.
    String database = db.schema() + "_locks";
    db.execute("CREATE DATABASE " + database);
    String url = db.jdbcUrl().replaceFirst("/[^/?]+(\\?|$)", "/" + database + "$1");
    String writerRole = db.schema() + "_lwriter";
    db.execute("CREATE ROLE " + writerRole + " LOGIN PASSWORD '" + PASSWORD + "'");
    try {
      HikariConfig config = new HikariConfig();
      config.setJdbcUrl(url);
      config.setMaximumPoolSize(2);
      try (HikariDataSource owner = new HikariDataSource(config)) {
        OutboxSchema.migrate(owner, "outbox");
        OutboxRoles.grant(owner, "outbox", writerRole, writerRole, writerRole);
        OutboxRoles.restrictAdvisoryLocks(owner, List.of(writerRole));
      }
      try (Connection other = DriverManager.getConnection(urlAs(url, hostileRole));
          Connection writer = DriverManager.getConnection(urlAs(url, writerRole))) {
        for (String lock :
            List.of(
                "pg_advisory_lock(1)",
                "pg_advisory_lock(1, 2)",
                "pg_try_advisory_lock_shared(1)",
                "pg_advisory_xact_lock(1)",
                "pg_try_advisory_xact_lock(1, 2)")) {
          assertThat(sqlState(other, "select " + lock))
              .as("another role: %s", lock)
              .isEqualTo("42501");
        }
        assertThat(sqlState(writer, "select pg_try_advisory_lock(1)")).isEqualTo("ok");
        writer.setAutoCommit(false);
        Outbox outbox = Outbox.builder().schema("outbox").build();
        outbox.append(writer, OutboxEvent.of("order", "1", "order.created", Map.of()));
        writer.commit();
        writer.setAutoCommit(true);
        assertThat(sqlState(writer, "select pg_advisory_unlock_all()")).isEqualTo("ok");
      }
    } finally {
      db.execute("DROP DATABASE IF EXISTS " + database + " WITH (FORCE)");
      db.execute("DROP ROLE IF EXISTS " + writerRole);
    }
  }

  private static String sqlState(Connection connection, String sql) {
    try (Statement statement = connection.createStatement()) {
      statement.execute(sql);
      return "ok";
    } catch (SQLException e) {
      return e.getSQLState();
    }
  }
}

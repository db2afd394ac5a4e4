package dev.pgoutbox.relay;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.core.Inbox;
import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.internal.StatsReader;
import dev.pgoutbox.relay.testing.DeadRows;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.TestSchema;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The host's pool sets its own session defaults ({@code connectionInitSql}, {@code options}, a
 * role's {@code ALTER ROLE ... SET}): a time zone with a 45-minute offset, another interval style,
 * serializable transactions, and a {@code search_path} whose first schema holds a decoy {@code
 * outbox_events}. pgoutbox must write, claim, back off, report and deduplicate exactly as with the
 * defaults, and never touch the decoy.
 */
class HostSessionSettingsIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static final String DECOY = "pgoutbox_decoy";

  private static HikariDataSource hostPool;

  @BeforeAll
  static void setUp() {
    db.execute("DROP SCHEMA IF EXISTS " + DECOY + " CASCADE");
    db.execute("CREATE SCHEMA " + DECOY);
    db.execute(
        "CREATE TABLE "
            + DECOY
            + ".outbox_events (LIKE "
            + db.schema()
            + ".outbox_events INCLUDING DEFAULTS)");
    db.execute(
        "CREATE TABLE "
            + DECOY
            + ".processed_events (LIKE "
            + db.schema()
            + ".processed_events INCLUDING DEFAULTS)");
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(db.jdbcUrl());
    config.setMaximumPoolSize(4);
    config.setPoolName("host-session-settings");
    config.setConnectionInitSql(
        "SET TIME ZONE 'Asia/Kathmandu'; SET IntervalStyle = 'sql_standard';"
            + " SET default_transaction_isolation = 'serializable';"
            + " SET search_path = "
            + DECOY
            + ", public");
    hostPool = new HikariDataSource(config);
  }

  @AfterAll
  static void close() {
    hostPool.close();
    db.execute("DROP SCHEMA IF EXISTS " + DECOY + " CASCADE");
  }

  @Test
  void writingRelayingBackingOffAndDeduplicatingIgnoreTheHostsSessionDefaults() throws Exception {
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    try (Connection connection = hostPool.getConnection()) {
      assertThat(sessionSetting(connection, "TimeZone")).isEqualTo("Asia/Kathmandu");
      assertThat(sessionSetting(connection, "search_path")).startsWith(DECOY);
      assertThat(sessionSetting(connection, "default_transaction_isolation"))
          .isEqualTo("serializable");
      connection.setAutoCommit(false);
      outbox.append(connection, OutboxEvent.of("order", "a", "order.placed", Map.of()));
      outbox.append(connection, OutboxEvent.of("order", "a", "order.paid", Map.of()));
      outbox.append(connection, OutboxEvent.of("order", "b", "order.placed", Map.of()));
      connection.commit();
    }
    UUID firstOfA =
        UUID.fromString(
            db.queryString(
                "SELECT id FROM outbox_events WHERE aggregate_id = 'a' ORDER BY position LIMIT 1"));
    AtomicBoolean refuseFirst = new AtomicBoolean(true);
    RecordingPublisher publisher =
        new RecordingPublisher()
            .decide(
                m ->
                    m.id().equals(firstOfA) && refuseFirst.get()
                        ? PublishResult.retryable("broker busy", Duration.ofSeconds(30))
                        : PublishResult.published());
    OutboxRelay relay =
        OutboxRelay.builder()
            .name("host-settings")
            .dataSource(hostPool)
            .schema(db.schema())
            .publisher(publisher)
            .config(RelayConfig.builder().listenForNotifications(false).build())
            .build();

    assertThat(relay.runOnce()).isPositive();

    assertThat(
            db.queryLong(
                "SELECT (extract(epoch FROM retry_after - clock_timestamp()))::bigint"
                    + " FROM outbox_events WHERE id = '"
                    + firstOfA
                    + "'"))
        .as("the retry hint lands 30 s ahead in database time")
        .isBetween(25L, 31L);
    assertThat(publisher.published("b")).isTrue();
    OutboxStats stats = StatsReader.on(hostPool, db.schema()).stats();
    assertThat(stats.oldestPendingAge()).isBetween(Duration.ZERO, Duration.ofMinutes(1));

    refuseFirst.set(false);
    assertThat(
            DeadRows.retry(
                DSL.using(hostPool, SQLDialect.POSTGRES, OutboxSchema.jooqSettings(db.schema())),
                firstOfA))
        .isTrue();
    assertThat(relay.runOnce()).isPositive();
    assertThat(
            publisher.delivered().stream()
                .filter(m -> m.aggregateId().equals("a"))
                .map(OutboxMessage::eventType)
                .toList())
        .as("a's events in order once the refused one went out")
        .isEqualTo(List.of("order.placed", "order.paid"));
    for (OutboxMessage message : publisher.delivered()) {
      Instant stored =
          Instant.EPOCH.plus(
              db.queryLong(
                  "SELECT (extract(epoch FROM created_at) * 1000000)::bigint FROM outbox_events"
                      + " WHERE id = '"
                      + message.id()
                      + "'"),
              ChronoUnit.MICROS);
      assertThat(message.createdAt())
          .as("createdAt, read in the host's time zone")
          .isEqualTo(stored);
    }

    Inbox inbox = Inbox.builder().schema(db.schema()).build();
    int handled = 0;
    for (int delivery = 0; delivery < 2; delivery++) {
      try (Connection connection = hostPool.getConnection()) {
        connection.setAutoCommit(false);
        if (inbox.handleOnce(connection, "billing", firstOfA, () -> {})) {
          handled++;
        }
        connection.commit();
      }
    }
    assertThat(handled).as("the second delivery is a duplicate").isEqualTo(1);

    assertThat(db.queryLong("SELECT count(*) FROM " + DECOY + ".outbox_events")).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM " + DECOY + ".processed_events")).isZero();
  }

  private static String sessionSetting(Connection connection, String name) throws Exception {
    try (var statement = connection.prepareStatement("SELECT current_setting(?)")) {
      statement.setString(1, name);
      try (var rs = statement.executeQuery()) {
        rs.next();
        return rs.getString(1);
      }
    }
  }
}

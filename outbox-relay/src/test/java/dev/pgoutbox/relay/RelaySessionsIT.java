package dev.pgoutbox.relay;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * What an operator and a host see of a relay's sessions: every session carries the relay's name in
 * {@code pg_stat_activity}; LISTEN works with the usual HikariCP setups or start() says what to
 * pass; a stopped relay does not start again; stop() reports an interrupted batch.
 */
class RelaySessionsIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private final ScheduledExecutorService executor =
      Executors.newScheduledThreadPool(2, Thread.ofVirtual().factory());

  @BeforeEach
  void empty() {
    db.execute("truncate outbox_events");
  }

  @AfterEach
  void shutdown() {
    executor.shutdownNow();
  }

  @Test
  void batchSessionFromTheHostsPoolCarriesTheRelaysNameWhileItHoldsRows() throws Exception {
    RecordingPublisher held = new RecordingPublisher().closeGate();
    OutboxRelay relay = relay("ops-batch", db.dataSource(), held).build();
    EventRows.insert(db.dsl(), "a", 1);
    CompletableFuture<Integer> batch = CompletableFuture.supplyAsync(() -> runOnce(relay));
    assertThat(held.awaitEntered(10)).isTrue();

    assertThat(
            db.queryLong(
                "select count(*) from pg_stat_activity where application_name ="
                    + " 'pgoutbox-relay-ops-batch' and state like 'idle in transaction%'"))
        .as("the claim transaction is found by the relay's name")
        .isEqualTo(1L);

    held.open();
    assertThat(batch.get(10, TimeUnit.SECONDS)).isEqualTo(1);
    assertThat(
            db.queryLong(
                "select count(*) from pg_stat_activity"
                    + " where application_name = 'pgoutbox-relay-ops-batch'"))
        .as("the pooled connection gets its own name back at commit")
        .isZero();
  }

  @Test
  void hikariConfiguredByDataSourceClassNameIsWokenByNotifications() throws Exception {
    HikariConfig config = new HikariConfig();
    config.setDataSourceClassName(PGSimpleDataSource.class.getName());
    config.addDataSourceProperty("url", db.jdbcUrl());
    config.setMaximumPoolSize(3);
    try (HikariDataSource pool = new HikariDataSource(config)) {
      assertWokenByNotification("by-class-name", pool);
    }
  }

  @Test
  void hikariWrappingAPgjdbcDataSourceIsWokenByNotifications() throws Exception {
    PGSimpleDataSource simple = new PGSimpleDataSource();
    simple.setUrl(db.jdbcUrl());
    HikariConfig config = new HikariConfig();
    config.setDataSource(simple);
    config.setMaximumPoolSize(3);
    try (HikariDataSource pool = new HikariDataSource(config)) {
      assertWokenByNotification("wrapping", pool);
    }
  }

  @Test
  void unknownDataSourceWithNotificationsOnFailsStartNamingTheFix() {
    DataSource unknown = new Delegating(db.dataSource());
    OutboxRelay relay = relay("unknown", unknown, new RecordingPublisher()).build();
    assertThatThrownBy(relay::start)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining(Delegating.class.getName())
        .hasMessageContaining(
            "listenConnectionFactory(ListenConnectionFactory.of(url, user, password))")
        .hasMessageContaining("listenForNotifications(false)");
    assertThat(relay.isRunning()).isFalse();
  }

  @Test
  void unknownDataSourcePollsWhenNotificationsAreOff() throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    try (OutboxRelay relay =
        relay("unknown-poll", new Delegating(db.dataSource()), publisher)
            .config(
                RelayConfig.builder()
                    .listenForNotifications(false)
                    .pollInterval(Duration.ofMillis(50))
                    .build())
            .build()) {
      relay.start();
      EventRows.insert(db.dsl(), "a", 1);
      assertThat(Eventually.holdsWithin(() -> publisher.delivered().size() == 1, 10)).isTrue();
    }
  }

  @Test
  void stoppedRelayRefusesToStartAgainAndSaysToBuildANewOne() {
    OutboxRelay relay = relay("once", db.dataSource(), new RecordingPublisher()).build();
    relay.start();
    assertThat(relay.stop(Duration.ofSeconds(10))).isTrue();
    assertThatThrownBy(relay::start)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("cannot start again: build a new relay");
  }

  @Test
  void stopReturnsFalseWhenItInterruptsTheBatchAndTheEventsStayPending() throws Exception {
    RecordingPublisher hung = new RecordingPublisher().neverAnswer();
    OutboxRelay relay =
        relay("interrupted", db.dataSource(), hung)
            .config(RelayConfig.builder().publishTimeout(Duration.ofMinutes(5)).build())
            .build();
    EventRows.insert(db.dsl(), "a", 1);
    relay.start();
    assertThat(hung.awaitEntered(10)).isTrue();

    assertThat(relay.stop(Duration.ofMillis(200)))
        .as("the batch in flight did not finish in time: interrupted and rolled back")
        .isFalse();
    assertThat(
            Eventually.holdsWithin(
                () ->
                    db.queryLong(
                            "select count(*) from pg_stat_activity where application_name ="
                                + " 'pgoutbox-relay-interrupted'")
                        == 0,
                10))
        .isTrue();
    assertThat(db.dsl().fetchCount(OUTBOX_EVENTS, OUTBOX_EVENTS.PROCESSED_AT.isNull()))
        .isEqualTo(1);
    assertThat(db.dsl().fetchOne(OUTBOX_EVENTS).getAttempts()).isZero();
  }

  private void assertWokenByNotification(String name, DataSource pool) throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    try (OutboxRelay relay =
        relay(name, pool, publisher)
            .config(RelayConfig.builder().pollInterval(Duration.ofHours(1)).build())
            .build()) {
      relay.start();
      String listenName = "pgoutbox-relay-" + name + "-listen";
      assertThat(
              Eventually.holdsWithin(
                  () -> db.listeningSessions("application_name = '" + listenName + "'") == 1, 10))
          .as("listening on a session named %s", listenName)
          .isTrue();
      EventRows.insert(db.dsl(), "a", 1);
      assertThat(Eventually.holdsWithin(() -> publisher.delivered().size() == 1, 10))
          .as("woken by the notification, not the hourly poll")
          .isTrue();
    }
  }

  private OutboxRelay.Builder relay(String name, DataSource dataSource, Publisher publisher) {
    return OutboxRelay.builder()
        .name(name)
        .dataSource(dataSource)
        .schema(db.schema())
        .publisher(publisher)
        .executor(executor);
  }

  private static int runOnce(OutboxRelay relay) {
    try {
      return relay.runOnce();
    } catch (InterruptedException e) {
      throw new IllegalStateException(e);
    }
  }

  /** A data source of a kind the relay does not know (e.g. another pool). */
  private record Delegating(DataSource target) implements DataSource {
    @Override
    public Connection getConnection() throws SQLException {
      return target.getConnection();
    }

    @Override
    public Connection getConnection(String user, String password) throws SQLException {
      return target.getConnection(user, password);
    }

    @Override
    public PrintWriter getLogWriter() throws SQLException {
      return target.getLogWriter();
    }

    @Override
    public void setLogWriter(PrintWriter out) throws SQLException {
      target.setLogWriter(out);
    }

    @Override
    public void setLoginTimeout(int seconds) throws SQLException {
      target.setLoginTimeout(seconds);
    }

    @Override
    public int getLoginTimeout() throws SQLException {
      return target.getLoginTimeout();
    }

    @Override
    public Logger getParentLogger() throws SQLFeatureNotSupportedException {
      return target.getParentLogger();
    }

    @Override
    public <T> T unwrap(Class<T> iface) throws SQLException {
      return target.unwrap(iface);
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) throws SQLException {
      return target.isWrapperFor(iface);
    }
  }
}

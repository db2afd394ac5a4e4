package dev.pgoutbox.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.relay.wal.WalRelay;
import dev.pgoutbox.testing.DeliveryChecker;
import dev.pgoutbox.testing.EmbeddedPostgresServer;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TcpProxy;
import dev.pgoutbox.testing.TestSchema;
import dev.pgoutbox.testing.TestServer;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A fail-over to a promoted standby with a failover slot (PostgreSQL 17 and later; here the
 * embedded 18): the relay creates its slot with {@code failover = true} ({@link
 * WalRelay.Builder#failoverSlot}), a synchronous standby cloned with the low-level backup API
 * ({@link EmbeddedPostgresServer#startStandby}) keeps a synchronized copy ({@code
 * sync_replication_slots}, {@code hot_standby_feedback}, the primary's {@code
 * synchronized_standby_slots}); the primary is killed while events flow, the standby promoted and
 * the proxy pointed at it. The relay resumes from the synchronized slot, without falling back, and
 * delivers every event, each aggregate in order.
 */
class WalFailoverSlotIT {

  private static final Logger LOG = LoggerFactory.getLogger(WalFailoverSlotIT.class);

  @RegisterExtension
  @Order(1)
  static final Servers servers = new Servers();

  @RegisterExtension
  @Order(2)
  static final TestSchema db = TestSchema.migratedOn(() -> servers, 8);

  @Test
  void onPostgres17AndLaterTheRelayResumesFromTheSynchronizedSlotOnThePromotedStandby()
      throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    List<String> fallBacks = new CopyOnWriteArrayList<>();
    WalRelay relay = FailoverWriter.relay(db, publisher, fallBacks).failoverSlot(true).build();
    FailoverWriter writer = new FailoverWriter(db);
    try {
      relay.start();
      Eventually.await("the reader attached", relay::isReading);
      assertThat(
              query(
                  servers.primary,
                  "select failover from pg_replication_slots" + " where slot_name = 'failover'"))
          .as("created as a failover slot")
          .isEqualTo("t");
      writer.thread.start();
      Eventually.await(
          "events flow through the slot",
          Duration.ofSeconds(60),
          () -> publisher.delivered().size() >= 50 && writer.rounds.get() >= 20);
      String confirmed =
          query(
              servers.primary,
              "select confirmed_flush_lsn from pg_replication_slots where slot_name = 'failover'");
      Eventually.await(
          "the standby's copy of the slot synchronized up to " + confirmed,
          Duration.ofSeconds(90),
          () ->
              "t"
                  .equals(
                      query(
                          servers.standby,
                          "select synced and confirmed_flush_lsn >= '"
                              + confirmed
                              + "'::pg_lsn from pg_replication_slots"
                              + " where slot_name = 'failover'")));

      servers.primary.crash();
      query(servers.standby, "select pg_promote(true, 60)");
      servers.proxy.retarget(servers.standby.port());
      servers.proxy.cut(); // what still pointed at the old primary goes
      servers.proxy.restore();
      int atPromotion = writer.rounds.get();
      Eventually.await(
          "writers write to the new primary",
          Duration.ofSeconds(60),
          () -> writer.rounds.get() >= atPromotion + 20);
      Eventually.await(
          "the relay streams the synchronized slot on the new primary",
          Duration.ofSeconds(60),
          () ->
              "t"
                      .equals(
                          query(
                              servers.standby,
                              "select active from pg_replication_slots where slot_name = 'failover'"))
                  && relay.isReading());
      int resumed = writer.rounds.get();
      Eventually.await(
          "events flow after the fail-over",
          Duration.ofSeconds(60),
          () -> writer.rounds.get() >= resumed + 20);
    } finally {
      writer.stop();
    }
    Eventually.await(
        "everything delivered", Duration.ofSeconds(60), () -> WalTestSupport.pending(db) == 0);
    assertThat(relay.hasFallenBack()).as("resumed in WAL mode").isFalse();
    assertThat(fallBacks).isEmpty();
    relay.stop(Duration.ofSeconds(10));

    DeliveryChecker.Verdict verdict =
        writer.check(publisher, LOG, "fail-over with a failover slot");
    assertThat(verdict.lost()).isZero();
    assertThat(verdict.reordered()).isZero();
  }

  private static String query(EmbeddedPostgresServer server, String sql) {
    try (java.sql.Connection c =
            java.sql.DriverManager.getConnection(server.jdbcUrl(), new java.util.Properties());
        java.sql.Statement s = c.createStatement();
        java.sql.ResultSet rs = s.executeQuery(sql)) {
      return rs.next() ? rs.getString(1) : null;
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(sql + " failed: " + e.getMessage(), e);
    }
  }

  /**
   * An embedded PostgreSQL primary with a synchronous standby cloned from it, slot synchronization
   * on, and the proxy the tests connect through (to the primary until the test moves it).
   */
  static final class Servers implements BeforeAllCallback, AfterAllCallback, TestServer {
    volatile EmbeddedPostgresServer primary;
    volatile EmbeddedPostgresServer standby;
    volatile TcpProxy proxy;

    @Override
    public void beforeAll(ExtensionContext context) {
      primary = EmbeddedPostgresServer.start(EmbeddedPostgresServer.LOGICAL_DECODING);
      Map<String, String> standbySettings = new HashMap<>();
      standbySettings.put("hot_standby_feedback", "on");
      standbySettings.put("sync_replication_slots", "on");
      standby = primary.startStandby("standby1", standbySettings);
      for (String sql :
          List.of(
              "alter system set synchronized_standby_slots = 'standby1_slot'",
              "alter system set synchronous_standby_names = 'standby1'")) {
        try (java.sql.Connection c =
                java.sql.DriverManager.getConnection(
                    primary.jdbcUrl(), new java.util.Properties());
            java.sql.Statement s = c.createStatement()) {
          s.execute(sql);
        } catch (java.sql.SQLException e) {
          throw new IllegalStateException(sql + " failed: " + e.getMessage(), e);
        }
      }
      query(primary, "select pg_reload_conf()");
      Eventually.await(
          "standby1 in sync",
          Duration.ofSeconds(60),
          () ->
              "sync"
                  .equals(
                      query(
                          primary,
                          "select sync_state from pg_stat_replication"
                              + " where application_name = 'standby1'")));
      proxy = TcpProxy.to(primary.port());
    }

    @Override
    public void afterAll(ExtensionContext context) throws Exception {
      FailoverWriter.closeAll(proxy, standby, primary);
    }

    @Override
    public String jdbcUrl() {
      return proxy.route(primary.jdbcUrl());
    }
  }
}

package dev.pgoutbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.relay.testing.TestWalRelays;
import dev.pgoutbox.relay.wal.WalRelay;
import dev.pgoutbox.testing.DeliveryChecker;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.PostgresCluster;
import dev.pgoutbox.testing.TcpProxy;
import dev.pgoutbox.testing.TestSchema;
import dev.pgoutbox.testing.TestServer;
import java.time.Duration;
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
 * A fail-over to a real streaming standby while events flow: a PostgreSQL 15 primary ({@code
 * wal_level = logical}, the machine's binaries, {@link PostgresCluster}) with a synchronous standby
 * cloned by {@code pg_basebackup -R}; the relay and the writers reach the database through a {@link
 * TcpProxy}, which the test points at the standby once it is promoted (as a virtual IP or a DNS
 * name would move). PostgreSQL 15 keeps no logical slot on a standby, so the new primary has none:
 * the relay notices, falls back to the table, which the standby replicated whole, and delivers
 * every event, each aggregate in order.
 */
class WalFailoverIT {

  private static final Logger LOG = LoggerFactory.getLogger(WalFailoverIT.class);

  @RegisterExtension
  @Order(1)
  static final Clusters clusters = new Clusters();

  @RegisterExtension
  @Order(2)
  static final TestSchema db = TestSchema.migratedOn(() -> clusters, 8);

  @Test
  void onPostgres15APromotedStandbyHasNoSlotAndTheRelayDeliversEverythingFromTheTable()
      throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    List<String> fallBacks = new CopyOnWriteArrayList<>();
    WalRelay relay = FailoverWriter.relay(db, publisher, fallBacks).build();
    WalRelay tooOld =
        TestWalRelays.builder(db, "failover_slot", new RecordingPublisher())
            .failoverSlot(true)
            .build();
    assertThatThrownBy(tooOld::start)
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("failoverSlot needs PostgreSQL 17 or later");
    assertThat(db.queryLong("select count(*) from pg_replication_slots"))
        .as("no slot created")
        .isZero();
    FailoverWriter writer = new FailoverWriter(db);
    try {
      relay.start();
      Eventually.await("the reader attached", relay::isReading);
      writer.thread.start();
      Eventually.await(
          "events flow through the slot",
          Duration.ofSeconds(60),
          () -> publisher.delivered().size() >= 50 && writer.rounds.get() >= 20);

      clusters.primary.crash();
      clusters.standby.promote();
      clusters.proxy.retarget(clusters.standby.port());
      clusters.proxy.cut(); // what still pointed at the old primary goes
      clusters.proxy.restore();
      int atPromotion = writer.rounds.get();
      Eventually.await(
          "writers write to the new primary",
          Duration.ofSeconds(60),
          () -> writer.rounds.get() >= atPromotion + 20);

      Eventually.await("the relay fell back", Duration.ofSeconds(60), relay::hasFallenBack);
      assertThat(fallBacks).anyMatch(r -> r.contains("failover") && r.contains("does not exist"));
      assertThat(clusters.standby.query("select count(*) from pg_replication_slots"))
          .as("PostgreSQL 15 and 16 keep no logical slot on a standby, later ones no plain one")
          .isEqualTo("0");
      int afterFallBack = writer.rounds.get();
      Eventually.await(
          "events flow after the fall-back",
          Duration.ofSeconds(60),
          () -> writer.rounds.get() >= afterFallBack + 20);
    } finally {
      writer.stop();
    }
    Eventually.await(
        "everything delivered from the table",
        Duration.ofSeconds(60),
        () -> WalTestSupport.pending(db) == 0);
    relay.stop(Duration.ofSeconds(10));

    DeliveryChecker.Verdict verdict = writer.check(publisher, LOG, "fail-over");
    assertThat(writer.failures.get()).as("the crash reached the writers").isPositive();
    assertThat(verdict.lost()).isZero();
    assertThat(verdict.reordered()).isZero();
  }

  /**
   * A PostgreSQL 15 primary with a synchronous streaming standby, and the proxy the tests connect
   * through (to the primary until the test moves it).
   */
  static final class Clusters implements BeforeAllCallback, AfterAllCallback, TestServer {
    volatile PostgresCluster primary;
    volatile PostgresCluster standby;
    volatile TcpProxy proxy;

    @Override
    public void beforeAll(ExtensionContext context) {
      primary = PostgresCluster.startPrimary(Map.of("wal_level", "logical"));
      standby = primary.startStandby("standby1", true);
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

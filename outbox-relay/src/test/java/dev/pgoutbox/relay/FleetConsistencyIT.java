package dev.pgoutbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.internal.FleetRegistry;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.TcpProxy;
import dev.pgoutbox.testing.TestSchema;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.net.SocketTimeoutException;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Relays on one outbox agree on ordering and dead-letter policy: a relay whose settings differ from
 * a live relay's refuses to start, naming both; stopped or crashed relays do not block a new
 * configuration; a registration cut off by the network mid-transaction does not keep the next relay
 * from starting.
 */
class FleetConsistencyIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private final List<OutboxRelay> started = new ArrayList<>();

  @BeforeEach
  void emptyRegistry() {
    db.execute("truncate outbox_relays");
  }

  @AfterEach
  void stopAll() {
    started.forEach(OutboxRelay::close);
  }

  private OutboxRelay start(String name, Ordering ordering, DeadLetterPolicy policy) {
    OutboxRelay relay =
        OutboxRelay.builder()
            .name(name)
            .dataSource(db.dataSource())
            .schema(db.schema())
            .publisher(new RecordingPublisher())
            .config(
                RelayConfig.builder()
                    .ordering(ordering)
                    .deadLetterPolicy(policy)
                    .listenForNotifications(false)
                    .build())
            .build();
    relay.start();
    started.add(relay);
    return relay;
  }

  @Test
  void aRelayWithAnotherOrderingOrPolicyRefusesToStartNamingTheOtherRelay() {
    start("strict-1", Ordering.STRICT, DeadLetterPolicy.HOLD_AGGREGATE);
    start("strict-2", Ordering.STRICT, DeadLetterPolicy.HOLD_AGGREGATE);

    assertThatThrownBy(() -> start("rolling", Ordering.UNORDERED, DeadLetterPolicy.HOLD_AGGREGATE))
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("ordering=UNORDERED differs from ordering=STRICT")
        .hasMessageContaining("relay 'strict-1'");
    assertThatThrownBy(() -> start("release", Ordering.STRICT, DeadLetterPolicy.RELEASE_AGGREGATE))
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining(
            "deadLetterPolicy=RELEASE_AGGREGATE differs from deadLetterPolicy=HOLD_AGGREGATE");
    assertThat(db.queryLong("select count(*) from outbox_relays")).isEqualTo(2);
  }

  @Test
  void aFleetRestartedWithANewConsistentSettingStartsOnceTheOldOneStopped() {
    OutboxRelay a = start("old-1", Ordering.STRICT, DeadLetterPolicy.HOLD_AGGREGATE);
    OutboxRelay b = start("old-2", Ordering.STRICT, DeadLetterPolicy.HOLD_AGGREGATE);
    a.close();
    b.close();

    start("new-1", Ordering.STRICT, DeadLetterPolicy.RELEASE_AGGREGATE);
    start("new-2", Ordering.STRICT, DeadLetterPolicy.RELEASE_AGGREGATE);

    assertThat(db.queryLong("select count(*) from outbox_relays")).isEqualTo(2);
  }

  @Test
  void aCrashedRelayStopsCountingOnceItsHeartbeatExpired() {
    // A relay that crashed a minute ago, and one elsewhere that is alive: rows as they would be.
    db.execute(
        "insert into outbox_relays (instance_id, relay_name, ordering, dead_letter_policy,"
            + " started_at, heartbeat_at) values (gen_random_uuid(), 'crashed', 'UNORDERED',"
            + " 'HOLD_AGGREGATE', now() - interval '1 hour', now() - interval '1 minute')");
    start("after-crash", Ordering.STRICT, DeadLetterPolicy.HOLD_AGGREGATE);
    assertThat(db.queryLong("select count(*) from outbox_relays where relay_name = 'crashed'"))
        .isZero();

    db.execute(
        "insert into outbox_relays (instance_id, relay_name, ordering, dead_letter_policy)"
            + " values (gen_random_uuid(), 'alive-elsewhere', 'STRICT', 'HOLD_AGGREGATE')");
    assertThatThrownBy(
            () -> start("unordered", Ordering.UNORDERED, DeadLetterPolicy.HOLD_AGGREGATE))
        .hasMessageContaining("relay 'after-crash'");
  }

  @Test
  void aForgedRegistrationWithAHeartbeatInTheFutureDoesNotBlockTheFleetForever() {
    for (String heartbeat : new String[] {"'infinity'", "now() + interval '1 year'"}) {
      db.execute(
          "insert into outbox_relays (instance_id, relay_name, ordering, dead_letter_policy,"
              + " heartbeat_at) values (gen_random_uuid(), 'forged', 'UNORDERED',"
              + " 'HOLD_AGGREGATE', "
              + heartbeat
              + ")");
      start("beside-forged", Ordering.STRICT, DeadLetterPolicy.HOLD_AGGREGATE);
      assertThat(db.queryLong("select count(*) from outbox_relays where relay_name = 'forged'"))
          .as("a registration whose heartbeat is %s", heartbeat)
          .isZero();
      stopAll();
      started.clear();
    }
  }

  @Test
  void aRegistrationCutOffBeforeItsCommitDoesNotBlockTheNextRelayForever() throws Exception {
    try (TcpProxy network = TcpProxy.toServerOf(db.jdbcUrl())) {
      PGSimpleDataSource throughNetwork = new PGSimpleDataSource();
      throughNetwork.setUrl(network.route(db.jdbcUrl()));
      throughNetwork.setSocketTimeout(1);
      // The partition falls between the registration's statements and its commit: the server keeps
      // the transaction open, idle, holding the fleet lock, and never hears from the client again.
      PGSimpleDataSource partitionedAtCommit =
          new PGSimpleDataSource() {
            @Override
            public Connection getConnection() throws SQLException {
              Connection real = throughNetwork.getConnection();
              return (Connection)
                  Proxy.newProxyInstance(
                      Connection.class.getClassLoader(),
                      new Class<?>[] {Connection.class},
                      (proxy, method, args) -> {
                        if (method.getName().equals("commit")) {
                          network.blackhole();
                        }
                        try {
                          return method.invoke(real, args);
                        } catch (InvocationTargetException e) {
                          throw e.getCause();
                        }
                      });
            }
          };
      FleetRegistry cutOff =
          new FleetRegistry(
              partitionedAtCommit,
              OutboxSchema.jooqSettings(db.schema()),
              db.schema(),
              "cut-off",
              Ordering.STRICT,
              DeadLetterPolicy.HOLD_AGGREGATE,
              FleetRegistry.TABLE_SOURCE);
      assertThatThrownBy(cutOff::register).hasRootCauseInstanceOf(SocketTimeoutException.class);
      assertThat(
              db.queryLong(
                  "select count(*) from pg_locks where locktype = 'advisory' and granted"
                      + " and pid in (select pid from pg_stat_activity"
                      + " where state = 'idle in transaction')"))
          .as("the cut-off registration's session holds the fleet lock, idle in transaction")
          .isEqualTo(1);

      CompletableFuture<OutboxRelay> next =
          CompletableFuture.supplyAsync(
              () -> start("after-partition", Ordering.STRICT, DeadLetterPolicy.HOLD_AGGREGATE));

      db.awaitAnyWaitingForLock("advisory");
      assertThat(next.get(60, TimeUnit.SECONDS).isRunning())
          .as("the server ended the idle registration and the next relay started")
          .isTrue();
      assertThat(db.queryLong("select count(*) from outbox_relays where relay_name = 'cut-off'"))
          .as("the cut-off registration was rolled back")
          .isZero();
    }
  }
}

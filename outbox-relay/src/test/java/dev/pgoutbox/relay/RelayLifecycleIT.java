package dev.pgoutbox.relay;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.relay.testing.DatabaseErrors;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.DeliveryChecker;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class RelayLifecycleIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  @BeforeEach
  void empty() {
    db.execute("truncate outbox_events");
  }

  private OutboxRelay.Builder relay(RecordingPublisher publisher) {
    return OutboxRelay.builder()
        .name("lifecycle")
        .dataSource(db.dataSource())
        .schema(db.schema())
        .publisher(publisher)
        .config(RelayConfig.builder().pollInterval(Duration.ofMillis(50)).build());
  }

  @Test
  void stopLetsTheBatchInFlightFinish() throws Exception {
    for (int seq = 1; seq <= 5; seq++) {
      EventRows.insert(db.dsl(), "a", seq);
    }
    RecordingPublisher publisher = new RecordingPublisher().closeGate();
    OutboxRelay relay = relay(publisher).build();
    relay.start();
    assertThat(publisher.awaitEntered(10)).isTrue();

    CompletableFuture<Boolean> stopped =
        CompletableFuture.supplyAsync(() -> relay.stop(Duration.ofSeconds(20)));
    assertThatThrownBy(() -> stopped.get(200, TimeUnit.MILLISECONDS))
        .as("stop() waits for the batch in flight")
        .isInstanceOf(java.util.concurrent.TimeoutException.class);
    publisher.open();

    assertThat(stopped.get(20, TimeUnit.SECONDS)).isTrue();
    assertThat(db.dsl().fetchCount(OUTBOX_EVENTS, OUTBOX_EVENTS.PROCESSED_AT.isNotNull()))
        .as("the batch in flight was committed")
        .isEqualTo(5);
    assertThat(relay.isRunning()).isFalse();
  }

  @Test
  void stopThatTimesOutRollsTheBatchBackAndLosesNothing() throws Exception {
    for (int seq = 1; seq <= 5; seq++) {
      EventRows.insert(db.dsl(), "a", seq);
    }
    RecordingPublisher stuck = new RecordingPublisher().neverAnswer();
    OutboxRelay relay =
        relay(stuck)
            .config(RelayConfig.builder().publishTimeout(Duration.ofMinutes(5)).build())
            .build();
    relay.start();
    assertThat(stuck.awaitEntered(10)).isTrue();

    assertThat(relay.stop(Duration.ofMillis(300))).isFalse();

    assertThat(
            Eventually.holdsWithin(
                () ->
                    db.dsl().fetchCount(OUTBOX_EVENTS, OUTBOX_EVENTS.PROCESSED_AT.isNull()) == 5
                        && db.queryLong(
                                "select count(*) from pg_locks l join pg_class c on c.oid ="
                                    + " l.relation where c.relname = 'outbox_events' and"
                                    + " c.relnamespace = '"
                                    + db.schema()
                                    + "'::regnamespace and l.mode = 'RowShareLock'")
                            == 0,
                10))
        .as("rolled back: still pending, no lock left")
        .isTrue();
    assertThat(db.dsl().fetchCount(OUTBOX_EVENTS, OUTBOX_EVENTS.ATTEMPTS.gt(0))).isZero();

    RecordingPublisher next = new RecordingPublisher();
    OutboxRelay successor = relay(next).build();
    while (successor.runOnce() > 0) {
      // drain
    }
    assertThat(next.delivered()).hasSize(5);
  }

  @Test
  void transientDatabaseErrorsDoNotStopTheRelay() throws Exception {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(db.jdbcUrl() + "&ApplicationName=lifecycle-victim");
    config.setMaximumPoolSize(2);
    DatabaseErrors errors = new DatabaseErrors();
    Map<String, Integer> written = new HashMap<>();
    RecordingPublisher publisher = new RecordingPublisher();
    try (HikariDataSource pool = new HikariDataSource(config);
        OutboxRelay relay =
            OutboxRelay.builder()
                .name("victim")
                .dataSource(pool)
                .schema(db.schema())
                .publisher(publisher)
                .listener(errors)
                .config(
                    RelayConfig.builder()
                        .batchSize(10)
                        .pollInterval(Duration.ofMillis(20))
                        .listenForNotifications(false)
                        .build())
                .build()) {
      relay.start();
      for (int round = 1; round <= 20; round++) {
        for (int a = 0; a < 10; a++) {
          EventRows.insert(db.dsl(), "agg-" + a, round);
          written.put("agg-" + a, round);
        }
        db.queryLong(
            "select count(pg_terminate_backend(pid)) from pg_stat_activity"
                + " where application_name in ('lifecycle-victim', 'pgoutbox-relay-victim')");
      }
      assertThat(
              Eventually.holdsWithin(
                  () ->
                      db.dsl().fetchCount(OUTBOX_EVENTS, OUTBOX_EVENTS.PROCESSED_AT.isNull()) == 0,
                  60))
          .isTrue();
      assertThat(relay.isRunning()).isTrue();
    }
    DeliveryChecker.Verdict report = DeliveryChecker.check(written, publisher.deliveredPayloads());
    assertThat(report.lost()).isZero();
    assertThat(report.reordered()).isZero();
    System.out.println("database errors survived: " + errors.errors().size() + "; " + report);
  }

  @Test
  void startingTwiceIsRefused() {
    OutboxRelay relay = relay(new RecordingPublisher()).build();
    relay.start();
    try {
      assertThatThrownBy(relay::start)
          .isInstanceOf(IllegalStateException.class)
          .hasMessage("relay lifecycle was already started");
      assertThatThrownBy(relay::runOnce)
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("is running");
    } finally {
      relay.close();
    }
  }

  @Test
  void startingOnAnUnmigratedSchemaSaysWhatToDo() {
    OutboxRelay relay = relay(new RecordingPublisher()).schema("no_such_schema").build();
    assertThatThrownBy(relay::start)
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("no_such_schema.outbox_events does not exist")
        .hasMessageContaining("OutboxSchema.migrate(dataSource, \"no_such_schema\")");
  }

  @Test
  void relayOnItsOwnExecutorStopsItsThread() throws Exception {
    OutboxRelay relay = relay(new RecordingPublisher()).build();
    relay.start();
    assertThat(Eventually.holdsWithin(() -> threadNamed("pgoutbox-relay-lifecycle"), 5)).isTrue();
    relay.close();
    assertThat(Eventually.holdsWithin(() -> !threadNamed("pgoutbox-relay-lifecycle"), 5)).isTrue();
  }

  private static boolean threadNamed(String name) {
    return Thread.getAllStackTraces().keySet().stream()
        .anyMatch(t -> t.getName().equals(name) && t.isAlive());
  }
}

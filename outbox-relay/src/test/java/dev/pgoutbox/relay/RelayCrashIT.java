package dev.pgoutbox.relay;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.DeliveryChecker;
import dev.pgoutbox.testing.TestSchema;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A relay that dies mid-batch loses nothing: its rows stay pending for another relay. */
class RelayCrashIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private final Map<String, Integer> written = new HashMap<>();

  @BeforeEach
  void writeEvents() {
    db.execute("truncate outbox_events");
    written.clear();
    for (int a = 0; a < 20; a++) {
      for (int seq = 1; seq <= 10; seq++) {
        EventRows.insert(db.dsl(), "agg-" + a, seq);
      }
      written.put("agg-" + a, 10);
    }
  }

  private HikariDataSource poolNamed(String applicationName) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(db.jdbcUrl() + "&ApplicationName=" + applicationName);
    config.setMaximumPoolSize(2);
    return new HikariDataSource(config);
  }

  private OutboxRelay relay(javax.sql.DataSource dataSource, Publisher publisher) {
    return OutboxRelay.builder()
        .name("crash")
        .dataSource(dataSource)
        .schema(db.schema())
        .publisher(publisher)
        .config(RelayConfig.builder().batchSize(100).build())
        .build();
  }

  @Test
  void relayWhoseConnectionIsTerminatedMidBatchLosesNothing() throws Exception {
    RecordingPublisher stuck = new RecordingPublisher().closeGate();
    try (HikariDataSource pool = poolNamed("relay-victim")) {
      OutboxRelay victim = relay(pool, stuck);
      CompletableFuture<Integer> inFlight =
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  return victim.runOnce();
                } catch (InterruptedException e) {
                  throw new IllegalStateException(e);
                }
              });
      assertThat(stuck.awaitEntered(10)).isTrue();
      long terminated =
          db.queryLong(
              "select count(pg_terminate_backend(pid)) from pg_stat_activity"
                  + " where application_name = 'pgoutbox-relay-crash' and state like 'idle in transaction%'");
      assertThat(terminated)
          .as("the victim's claim transaction was found and killed")
          .isEqualTo(1L);
      stuck.open();
      assertThatThrownBy(() -> inFlight.get(10, TimeUnit.SECONDS))
          .isInstanceOf(ExecutionException.class)
          .hasRootCauseInstanceOf(java.sql.SQLException.class);
    }
    assertThat(stuck.delivered()).as("the victim's publisher did deliver its batch").isNotEmpty();
    assertThat(db.dsl().fetchCount(OUTBOX_EVENTS, OUTBOX_EVENTS.PROCESSED_AT.isNotNull()))
        .as("but none of it was marked")
        .isZero();

    RecordingPublisher survivor = new RecordingPublisher();
    OutboxRelay rescuer = relay(db.dataSource(), survivor);
    while (rescuer.runOnce() > 0) {
      // drain
    }

    DeliveryChecker.Verdict report = DeliveryChecker.check(written, survivor.deliveredPayloads());
    assertThat(report.lost()).isZero();
    assertThat(report.reordered()).isZero();
    assertThat(db.dsl().fetchCount(OUTBOX_EVENTS, OUTBOX_EVENTS.PROCESSED_AT.isNull())).isZero();
  }

  @Test
  void relayInterruptedBeforeCommitRollsBackAndAnotherRelayPublishesEverything() throws Exception {
    RecordingPublisher stuck = new RecordingPublisher().closeGate();
    OutboxRelay victim = relay(db.dataSource(), stuck);
    Thread worker =
        Thread.ofPlatform()
            .start(
                () -> {
                  try {
                    victim.runOnce();
                  } catch (InterruptedException expected) {
                    // the crash we simulate
                  }
                });
    assertThat(stuck.awaitEntered(10)).isTrue();
    worker.interrupt();
    worker.join(10_000);
    assertThat(worker.isAlive()).isFalse();
    assertThat(db.dsl().fetchCount(OUTBOX_EVENTS, OUTBOX_EVENTS.PROCESSED_AT.isNotNull())).isZero();
    assertThat(db.dsl().fetchCount(OUTBOX_EVENTS, OUTBOX_EVENTS.ATTEMPTS.gt(0)))
        .as("a rolled-back batch counts no attempt")
        .isZero();

    RecordingPublisher survivor = new RecordingPublisher();
    OutboxRelay rescuer = relay(db.dataSource(), survivor);
    while (rescuer.runOnce() > 0) {
      // drain
    }
    DeliveryChecker.Verdict report = DeliveryChecker.check(written, survivor.deliveredPayloads());
    assertThat(report.lost()).isZero();
    assertThat(report.reordered()).isZero();
    assertThat(report.duplicates()).isZero();
  }

  @Test
  void aSecondRelayCannotClaimAnAggregateWhileTheFirstHoldsIt() throws Exception {
    for (int a = 20; a < 60; a++) {
      for (int seq = 1; seq <= 10; seq++) {
        EventRows.insert(db.dsl(), "agg-" + a, seq);
      }
    }
    RecordingPublisher stuck = new RecordingPublisher().closeGate();
    OutboxRelay first = relay(db.dataSource(), stuck);
    CompletableFuture<Integer> inFlight =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                return first.runOnce();
              } catch (InterruptedException e) {
                throw new IllegalStateException(e);
              }
            });
    assertThat(stuck.awaitEntered(10)).isTrue();

    RecordingPublisher other = new RecordingPublisher();
    int claimed = relay(db.dataSource(), other).runOnce();
    java.util.Set<String> held = new java.util.HashSet<>();
    stuck.open();
    assertThat(inFlight.get(10, TimeUnit.SECONDS)).isGreaterThan(0);
    stuck.delivered().forEach(m -> held.add(m.aggregateId()));
    assertThat(claimed).as("the second relay found aggregates of its own").isGreaterThan(0);
    assertThat(other.delivered())
        .as("the second relay took only aggregates the first did not hold")
        .allSatisfy(m -> assertThat(held).doesNotContain(m.aggregateId()));
  }
}

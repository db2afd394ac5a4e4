package dev.pgoutbox.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * With notifications on and a one-hour poll interval, only a notification (or a reconnect) can make
 * the relay publish quickly.
 */
class WakeUpIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  @BeforeEach
  void empty() {
    db.execute("truncate outbox_events");
  }

  @Test
  void notificationWakesTheRelayLongBeforeThePollAndSurvivesATerminatedListener() throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    ScheduledExecutorService executor =
        Executors.newScheduledThreadPool(1, Thread.ofVirtual().factory());
    try (OutboxRelay relay =
        OutboxRelay.builder()
            .name("wake")
            .dataSource(db.dataSource())
            .schema(db.schema())
            .publisher(publisher)
            .executor(executor)
            .listenConnectionFactory(
                ListenConnectionFactory.of(
                    db.jdbcUrl() + "&ApplicationName=wake-listen", new java.util.Properties()))
            .config(RelayConfig.builder().pollInterval(Duration.ofHours(1)).build())
            .build()) {
      relay.start();
      // The first poll runs at start; wait until the relay is idle and listening.
      assertThat(Eventually.holdsWithin(() -> listeners() == 1L, 10)).isTrue();

      EventRows.insert(db.dsl(), "a", 1);
      assertThat(Eventually.holdsWithin(() -> publisher.delivered().size() == 1, 10))
          .as("woken by the notification, not the hourly poll")
          .isTrue();

      long killed =
          db.queryLong(
              "select count(pg_terminate_backend(pid)) from pg_stat_activity"
                  + " where application_name = 'pgoutbox-relay-wake-listen'");
      assertThat(killed).isEqualTo(1L);
      assertThat(Eventually.holdsWithin(() -> listeners() == 1L, 20))
          .as("the listener reconnected")
          .isTrue();

      EventRows.insert(db.dsl(), "a", 2);
      assertThat(Eventually.holdsWithin(() -> publisher.delivered().size() == 2, 10))
          .as("woken again after the reconnect")
          .isTrue();
    } finally {
      executor.shutdownNow();
    }
  }

  @Test
  void pollOnlyRelayFindsEventsWithoutNotifications() throws Exception {
    OutboxSchema.setNotifyTrigger(db.dataSource(), db.schema(), false);
    RecordingPublisher publisher = new RecordingPublisher();
    try (OutboxRelay relay =
        OutboxRelay.builder()
            .dataSource(db.dataSource())
            .schema(db.schema())
            .publisher(publisher)
            .config(
                RelayConfig.builder()
                    .listenForNotifications(false)
                    .pollInterval(Duration.ofMillis(100))
                    .build())
            .build()) {
      relay.start();
      EventRows.insert(db.dsl(), "a", 1);
      assertThat(Eventually.holdsWithin(() -> publisher.delivered().size() == 1, 10)).isTrue();
      assertThat(listeners()).isZero();
    } finally {
      OutboxSchema.setNotifyTrigger(db.dataSource(), db.schema(), true);
    }
  }

  private static long listeners() {
    return db.listeningSessions("application_name = 'pgoutbox-relay-wake-listen'");
  }
}

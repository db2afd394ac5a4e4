package dev.pgoutbox.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.ListenConnectionFactory;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The relay reads its notifications between back-to-back batches without waiting ({@link
 * NotificationWaiter#drain}): a pile of them, one per writer transaction as under sustained load,
 * is read to the end and nothing is left for the next wait.
 */
class NotificationWaiterIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static final int PILE = 20_000;

  @Test
  void drainReadsAPileOfNotificationsWithoutWaitingAndLeavesNothingBehind() throws Exception {
    String channel = OutboxSchema.notifyChannel(db.schema());
    try (NotificationWaiter waiter =
        new NotificationWaiter(
            db::connect,
            channel,
            "pgoutbox-notification-waiter-it",
            new RelayLog("notification-waiter-it"),
            Duration.ofSeconds(1))) {
      assertThat(waiter.await(Duration.ofMillis(1))).as("the first wait connects").isTrue();
      assertThat(waiter.drain()).as("nothing announced yet").isZero();

      // Distinct payloads: PostgreSQL folds only identical notifications of one transaction.
      db.dsl()
          .execute(
              "select count(pg_notify(?, g::text)) from generate_series(1, " + PILE + ") g",
              channel);

      AtomicInteger read = new AtomicInteger();
      Eventually.await(
          "the whole pile read by drain()",
          Duration.ofSeconds(30),
          () -> read.addAndGet(waiter.drain()) >= PILE);
      assertThat(read.get()).isEqualTo(PILE);
      assertThat(waiter.drain()).as("nothing left over").isZero();
      assertThat(waiter.await(Duration.ofMillis(20)))
          .as("the next wait finds nothing left to read")
          .isFalse();
    }
  }

  /**
   * Writers that never pause: two sessions notify back to back until the test has finished reading.
   * pgjdbc on its own reads notifications for as long as the next one arrives within 1 ms; through
   * {@link ListenConnectionFactory#of} (with {@link dev.pgoutbox.relay.ListenSocketFactory})
   * drain() and the wait after the first notification read what has arrived and return while the
   * stream goes on. Nothing is timed but the test's bound: a read that follows the stream until it
   * ends never returns here. (Whether pgjdbc alone finds a 1 ms pause in such a stream depends on
   * the machine; at a steady 2,000 commits a second it mostly did not, see docs/performance.md.)
   */
  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void aStreamOfNotificationsThatNeverPausesDoesNotKeepTheRelayReading() throws Exception {
    String channel = OutboxSchema.notifyChannel(db.schema());
    AtomicBoolean reading = new AtomicBoolean(true);
    AtomicLong sent = new AtomicLong();
    CountDownLatch streaming = new CountDownLatch(2);
    List<Thread> writers = new ArrayList<>();
    try (NotificationWaiter waiter =
        new NotificationWaiter(
            ListenConnectionFactory.of(db.jdbcUrl(), new Properties()),
            channel,
            "pgoutbox-notification-waiter-it",
            new RelayLog("notification-waiter-it"),
            Duration.ofSeconds(1))) {
      assertThat(waiter.await(Duration.ofMillis(1))).as("the first wait connects").isTrue();
      for (int w = 0; w < 2; w++) {
        Thread writer =
            Thread.ofPlatform()
                .start(
                    () -> {
                      try (Connection connection = db.connect();
                          PreparedStatement notify =
                              connection.prepareStatement("select pg_notify(?, ?)")) {
                        notify.setString(1, channel);
                        streaming.countDown();
                        while (reading.get()) {
                          notify.setString(2, Long.toString(sent.incrementAndGet()));
                          notify.execute();
                        }
                      } catch (Exception e) {
                        throw new IllegalStateException(e);
                      }
                    });
        writers.add(writer);
      }
      streaming.await();
      Eventually.await("the stream has started", Duration.ofSeconds(30), () -> sent.get() > 1_000);

      int drained = 0;
      for (int i = 0; i < 50; i++) {
        drained += waiter.drain();
        assertThat(waiter.await(Duration.ofSeconds(5)))
            .as("each wait is woken by the stream and returns while it goes on")
            .isTrue();
      }
      assertThat(writers)
          .as("the writers were still sending when the reads ended")
          .allMatch(Thread::isAlive);
      reading.set(false);
      for (Thread writer : writers) {
        writer.join();
      }
      assertThat(drained).as("drain() read what had arrived").isPositive();
    } finally {
      reading.set(false);
    }
  }
}

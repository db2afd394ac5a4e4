package dev.pgoutbox.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
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
}

package dev.pgoutbox.relay.nats;

import static dev.pgoutbox.relay.nats.NatsPublisherIT.URL;
import static dev.pgoutbox.relay.nats.NatsPublisherIT.options;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.brokers.OrderChecker;
import dev.pgoutbox.relay.brokers.RelayDrive;
import dev.pgoutbox.relay.brokers.TestEvents;
import dev.pgoutbox.relay.testing.DeadRows.Dead;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.NatsServer;
import dev.pgoutbox.testing.TestSchema;
import io.nats.client.Connection;
import io.nats.client.Nats;
import io.nats.client.api.StorageType;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A real {@code OutboxRelay} drains the real outbox table through {@link NatsPublisher}. */
class NatsRelayIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  static Connection admin;

  @BeforeAll
  static void connect() throws Exception {
    admin = Nats.connect(options(URL));
  }

  @AfterAll
  static void disconnect() throws Exception {
    admin.close();
  }

  @Test
  void relayDrainsTenThousandEventsOverAThousandAggregatesThroughJetStream() throws Exception {
    String prefix = NatsPublisherIT.stream(admin, StorageType.File, -1);
    try {
      TestEvents events = TestEvents.of("order", 1000, 10, 500);
      RelayDrive drive = new RelayDrive(db).truncate().write(events.all());
      try (NatsPublisher publisher =
          NatsPublisher.builder(options(URL)).routing(NatsRouting.byTypes(prefix)).build()) {
        drive.drain(publisher, 1, 500, Duration.ofMinutes(3));
      }
      drive.assertAllPublishedBut(0);
      OrderChecker checker = events.checker();
      NatsPublisherIT.consume(admin, prefix, events.size(), checker);
      checker.assertComplete();
    } finally {
      NatsPublisherIT.deleteStream(admin, prefix);
    }
  }

  @Test
  void serverDownMidRunEventsBackOffAndAreAllDeliveredAfterItRestarts() throws Exception {
    try (NatsServer server = NatsServer.start()) {
      Connection own = Nats.connect(options(server.url()));
      try {
        String prefix = NatsPublisherIT.stream(own, StorageType.File, -1);
        TestEvents events = TestEvents.of("outage", 200, 5, 200);
        RelayDrive drive = new RelayDrive(db).truncate().write(events.all());
        server.stop();
        try (NatsPublisher publisher =
            NatsPublisher.builder(options(server.url()))
                .routing(NatsRouting.byTypes(prefix))
                .ackTimeout(Duration.ofSeconds(2))
                .build()) {
          CompletableFuture<Duration> drain =
              drive.drainInBackground(publisher, 1, 200, Duration.ofMinutes(3));
          Eventually.await(
              "failed attempts while NATS is down",
              Duration.ofMinutes(1),
              () -> drive.failedAttempts() > 0 || drain.isDone());
          server.restart();
          drain.get(4, TimeUnit.MINUTES);
        }
        drive.assertAllPublishedBut(0);
        // A fresh connection: one that lived through the restart may have lost its reply
        // subscription (seen with jnats 2.24 against nats-server 2.9).
        Connection check = Nats.connect(options(server.url()));
        try {
          OrderChecker checker = events.checker();
          NatsPublisherIT.consume(check, prefix, events.size(), checker);
          checker.assertComplete();
        } finally {
          check.close();
        }
      } finally {
        own.close();
      }
    }
  }

  @Test
  void tooLargeForTheStreamIsDeadLetteredWithAReadableLastError() throws Exception {
    String prefix = NatsPublisherIT.stream(admin, StorageType.Memory, 1024);
    try {
      OutboxMessage big =
          TestEvents.one("big", "a-1", 1, "{\"blob\":\"" + "x".repeat(4096) + "\"}");
      OutboxMessage fine = TestEvents.one("big", "a-2", 1, "{}");
      RelayDrive drive = new RelayDrive(db).truncate().write(List.of(big, fine));
      try (NatsPublisher publisher =
          NatsPublisher.builder(admin).routing(NatsRouting.byTypes(prefix)).build()) {
        drive.drain(publisher, 1, 10, Duration.ofMinutes(1));
      }
      List<Dead> dead = drive.deadLetters();
      assertThat(dead).extracting(Dead::id).containsExactly(big.id());
      assertThat(dead.get(0).lastError())
          .contains("message size exceeds maximum")
          .contains(prefix + ".big.big.step");
      assertThat(drive.processed()).isEqualTo(1);
    } finally {
      NatsPublisherIT.deleteStream(admin, prefix);
    }
  }
}

package dev.pgoutbox.relay.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.brokers.OrderChecker;
import dev.pgoutbox.relay.brokers.RelayDrive;
import dev.pgoutbox.relay.brokers.TestEvents;
import dev.pgoutbox.relay.testing.DeadRows.Dead;
import dev.pgoutbox.testing.EmbeddedKafka;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A real {@code OutboxRelay} drains the real outbox table through {@link KafkaPublisher}. */
class KafkaRelayIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  static EmbeddedKafka kafka;

  @BeforeAll
  static void startKafka() throws Exception {
    kafka = EmbeddedKafka.start();
  }

  @AfterAll
  static void stopKafka() throws Exception {
    kafka.close();
  }

  @Test
  void relayDrainsTenThousandEventsOverAThousandAggregatesThroughKafka() throws Exception {
    kafka.createTopic("order", 8);
    TestEvents events = TestEvents.of("order", 1000, 10, 500);
    RelayDrive drive = new RelayDrive(db).truncate().write(events.all());
    try (KafkaPublisher publisher = KafkaPublisher.builder(kafka.bootstrapServers()).build()) {
      drive.drain(publisher, 1, 500, Duration.ofMinutes(3));
    }
    drive.assertAllPublishedBut(0);
    OrderChecker checker = events.checker();
    KafkaPublisherIT.consume(kafka.bootstrapServers(), "order", events.size(), checker);
    checker.assertComplete();
  }

  @Test
  void brokerDownMidRunEventsBackOffAndAreAllDeliveredAfter() throws Exception {
    kafka.createTopic("outage", 4);
    TestEvents events = TestEvents.of("outage", 200, 5, 200);
    RelayDrive drive = new RelayDrive(db).truncate().write(events.all());
    kafka.stop();
    try (KafkaPublisher publisher =
        KafkaPublisher.builder(kafka.bootstrapServers())
            .deliveryTimeout(Duration.ofSeconds(2))
            .build()) {
      CompletableFuture<Duration> drain =
          drive.drainInBackground(publisher, 1, 200, Duration.ofMinutes(3));
      Eventually.await(
          "failed attempts while Kafka is down",
          Duration.ofMinutes(1),
          () -> drive.failedAttempts() > 0 || drain.isDone());
      kafka.restart();
      drain.get(4, TimeUnit.MINUTES);
    }
    drive.assertAllPublishedBut(0);
    OrderChecker checker = events.checker();
    KafkaPublisherIT.consume(kafka.bootstrapServers(), "outage", events.size(), checker);
    checker.assertComplete();
  }

  @Test
  void recordTooLargeIsDeadLetteredWithAReadableLastError() throws Exception {
    kafka.createTopic("large", 2);
    OutboxMessage huge =
        TestEvents.one("large", "a-1", 1, "{\"blob\":\"" + "x".repeat(2 * 1024 * 1024) + "\"}");
    OutboxMessage fine = TestEvents.one("large", "a-2", 1, "{\"aggregate\":\"a-2\",\"seq\":1}");
    RelayDrive drive = new RelayDrive(db).truncate().write(List.of(huge, fine));
    try (KafkaPublisher publisher = KafkaPublisher.builder(kafka.bootstrapServers()).build()) {
      drive.drain(publisher, 1, 10, Duration.ofMinutes(1));
    }
    List<Dead> dead = drive.deadLetters();
    assertThat(dead).extracting(Dead::id).containsExactly(huge.id());
    assertThat(dead.get(0).lastError())
        .contains("RecordTooLargeException")
        .contains("Kafka topic large");
    assertThat(drive.processed()).isEqualTo(1);
  }
}

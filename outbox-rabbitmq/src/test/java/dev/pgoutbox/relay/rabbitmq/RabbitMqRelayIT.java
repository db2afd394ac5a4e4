package dev.pgoutbox.relay.rabbitmq;

import static dev.pgoutbox.relay.rabbitmq.RabbitMqPublisherIT.PORT;
import static dev.pgoutbox.relay.rabbitmq.RabbitMqPublisherIT.adminChannel;
import static dev.pgoutbox.relay.rabbitmq.RabbitMqPublisherIT.factory;
import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.BuiltinExchangeType;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.brokers.OrderChecker;
import dev.pgoutbox.relay.brokers.RelayDrive;
import dev.pgoutbox.relay.brokers.TestEvents;
import dev.pgoutbox.relay.testing.DeadRows.Dead;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TcpProxy;
import dev.pgoutbox.testing.TestSchema;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A real {@code OutboxRelay} drains the real outbox table through {@link RabbitMqPublisher}. */
class RabbitMqRelayIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  @BeforeAll
  static void connect() throws Exception {
    RabbitMqPublisherIT.connect();
  }

  @AfterAll
  static void disconnect() throws Exception {
    RabbitMqPublisherIT.disconnect();
  }

  @Test
  void relayDrainsTenThousandEventsOverAThousandAggregatesThroughRabbitMq() throws Exception {
    String[] eq = RabbitMqPublisherIT.exchangeWithQueue("relay");
    TestEvents events = TestEvents.of("order", 1000, 10, 500);
    RelayDrive drive = new RelayDrive(db).truncate().write(events.all());
    try (RabbitMqPublisher publisher =
        RabbitMqPublisher.builder(factory(PORT), RabbitMqRouting.byEventType(eq[0])).build()) {
      drive.drain(publisher, 1, 500, Duration.ofMinutes(3));
    }
    drive.assertAllPublishedBut(0);
    OrderChecker checker = events.checker();
    RabbitMqPublisherIT.consume(eq[1], events.size(), checker, "order");
    checker.assertComplete();
  }

  @Test
  void brokerUnreachableMidRunEventsBackOffAndAreAllDeliveredAfter() throws Exception {
    String[] eq = RabbitMqPublisherIT.exchangeWithQueue("relay-outage");
    TestEvents events = TestEvents.of("outage", 200, 5, 200);
    RelayDrive drive = new RelayDrive(db).truncate().write(events.all());
    try (TcpProxy proxy = TcpProxy.to(PORT);
        RabbitMqPublisher publisher =
            RabbitMqPublisher.builder(factory(proxy.port()), RabbitMqRouting.byEventType(eq[0]))
                .confirmTimeout(Duration.ofSeconds(5))
                .build()) {
      proxy.cut();
      CompletableFuture<Duration> drain =
          drive.drainInBackground(publisher, 1, 200, Duration.ofMinutes(3));
      Eventually.await(
          "failed attempts while RabbitMQ is unreachable",
          Duration.ofMinutes(1),
          () -> drive.failedAttempts() > 0 || drain.isDone());
      proxy.restore();
      drain.get(4, TimeUnit.MINUTES);
    }
    drive.assertAllPublishedBut(0);
    OrderChecker checker = events.checker();
    RabbitMqPublisherIT.consume(eq[1], events.size(), checker, "outage");
    checker.assertComplete();
  }

  @Test
  void unroutableEventIsDeadLetteredWithAReadableLastError() throws Exception {
    String exchange = "pgoutbox.test.relay-unroutable." + UUID.randomUUID();
    adminChannel.exchangeDeclare(exchange, BuiltinExchangeType.DIRECT, false, true, null);
    String queue = adminChannel.queueDeclare("", false, true, true, null).getQueue();
    adminChannel.queueBind(queue, exchange, "bound.step");
    OutboxMessage unroutable = TestEvents.one("nobody", "a-1", 1, "{}");
    OutboxMessage routed = TestEvents.one("bound", "a-2", 1, "{}");
    RelayDrive drive = new RelayDrive(db).truncate().write(List.of(unroutable, routed));
    try (RabbitMqPublisher publisher =
        RabbitMqPublisher.builder(factory(PORT), RabbitMqRouting.byEventType(exchange)).build()) {
      drive.drain(publisher, 1, 10, Duration.ofMinutes(1));
    }
    List<Dead> dead = drive.deadLetters();
    assertThat(dead).extracting(Dead::id).containsExactly(unroutable.id());
    assertThat(dead.get(0).lastError())
        .contains("unroutable")
        .contains("nobody.step")
        .contains("NO_ROUTE");
    assertThat(drive.processed()).isEqualTo(1);
  }
}

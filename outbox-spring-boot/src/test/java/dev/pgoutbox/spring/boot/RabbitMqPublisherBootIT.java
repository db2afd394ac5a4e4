package dev.pgoutbox.spring.boot;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.Delivery;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.rabbitmq.RabbitMqPublisher;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Import;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * {@code pgoutbox.publisher.type=rabbitmq} in a Boot application: the publisher built on the
 * connection Boot configured from {@code spring.rabbitmq.*}, an event committed in a
 * {@code @Transactional} method read back from the machine's RabbitMQ.
 */
@SpringBootTest(
    classes = RabbitMqPublisherBootIT.App.class,
    properties = {
      "pgoutbox.publisher.type=rabbitmq",
      "pgoutbox.relay.name=boot-rabbitmq",
      "spring.rabbitmq.username=guest",
      "spring.rabbitmq.password=guest"
    })
@DirtiesContext
class RabbitMqPublisherBootIT {

  @RegisterExtension static final TestSchema db = TestSchema.empty();

  static final String EXCHANGE = "pgoutbox-boot-it-" + UUID.randomUUID();
  static final BlockingQueue<Delivery> received = new LinkedBlockingQueue<>();
  static Connection rabbit;

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import(Orders.class)
  static class App {}

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    BootTests.database(registry, db);
    registry.add("spring.rabbitmq.host", () -> BootTests.RABBITMQ_HOST);
    registry.add("spring.rabbitmq.port", () -> BootTests.RABBITMQ_PORT);
    registry.add("pgoutbox.publisher.rabbitmq.exchange", () -> EXCHANGE);
  }

  @BeforeAll
  static void exchangeAndQueue() throws Exception {
    db.execute(Orders.TABLE_DDL.formatted(db.schema()));
    ConnectionFactory factory = new ConnectionFactory();
    factory.setHost(BootTests.RABBITMQ_HOST);
    factory.setPort(BootTests.RABBITMQ_PORT);
    rabbit = factory.newConnection("pgoutbox-boot-it-consumer");
    Channel channel = rabbit.createChannel();
    // Auto-delete: both go away with the consumer's connection.
    channel.exchangeDeclare(EXCHANGE, "topic", false, true, null);
    channel.queueDeclare(EXCHANGE, false, false, true, null);
    channel.queueBind(EXCHANGE, EXCHANGE, "#");
    channel.basicConsume(EXCHANGE, true, (tag, delivery) -> received.add(delivery), tag -> {});
  }

  @AfterAll
  static void stopTheRelayThenTheConsumer(@Autowired OutboxRelayLifecycle relay) throws Exception {
    relay.stop(); // before the schema is dropped
    rabbit.close();
  }

  @Autowired Orders orders;
  @Autowired Publisher publisher;

  @Test
  void commitPublishesToRabbitMqAndRollbackPublishesNothing() throws Exception {
    assertThat(publisher).isInstanceOf(RabbitMqPublisher.class);

    assertThatThrownBy(() -> orders.place("r-rolled-back", true))
        .hasMessageContaining("payment refused");
    UUID committed = orders.place("r-committed", false);

    Delivery delivery = received.poll(30, TimeUnit.SECONDS);
    assertThat(delivery).as("the committed event, from RabbitMQ").isNotNull();
    assertThat(delivery.getProperties().getMessageId()).isEqualTo(committed.toString());
    assertThat(delivery.getEnvelope().getExchange()).isEqualTo(EXCHANGE);
    assertThat(delivery.getEnvelope().getRoutingKey()).isEqualTo("order.placed");
    assertThat(delivery.getProperties().getHeaders().get("aggregate_id"))
        .hasToString("r-committed");
    assertThat(new String(delivery.getBody(), UTF_8))
        .isEqualToIgnoringWhitespace("{\"id\":\"r-committed\"}");

    Eventually.await(
        "the committed event marked processed", Duration.ofSeconds(15), () -> unprocessed() == 0);
    assertThat(count("aggregate_id = 'r-rolled-back'")).isZero();
    assertThat(received).as("nothing but the committed event").isEmpty();
  }

  private static long unprocessed() {
    return count("processed_at IS NULL");
  }

  private static long count(String where) {
    return db.queryLong("SELECT count(*) FROM " + db.schema() + ".outbox_events WHERE " + where);
  }
}

package dev.pgoutbox.example.orders;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The service on the machine's RabbitMQ and NATS JetStream ({@code PGOUTBOX_TEST_RABBITMQ_URI},
 * {@code PGOUTBOX_TEST_NATS_URL}; defaults 127.0.0.1): orders in, shipments out, in order.
 */
class OtherBrokersIT {

  @RegisterExtension static final TestSchema db = TestSchema.empty();

  private static final String RABBITMQ =
      System.getenv()
          .getOrDefault("PGOUTBOX_TEST_RABBITMQ_URI", "amqp://guest:guest@127.0.0.1:5672");
  private static final String NATS =
      System.getenv().getOrDefault("PGOUTBOX_TEST_NATS_URL", "nats://127.0.0.1:4222");

  @Test
  void ordersFlowThroughRabbitMq() {
    ordersFlowThrough(new BrokerChoice(BrokerChoice.Kind.RABBITMQ, RABBITMQ), "rabbit");
  }

  @Test
  void ordersFlowThroughNatsJetStream() {
    ordersFlowThrough(new BrokerChoice(BrokerChoice.Kind.NATS, NATS), "nats");
  }

  private static void ordersFlowThrough(BrokerChoice broker, String name) {
    // A schema and topic of its own per run, so reruns and other tests never share a queue.
    String suffix = UUID.randomUUID().toString().substring(0, 8);
    String schema = db.schema() + "_" + name;
    String topic = "pgoutbox-it-" + name + "-" + suffix;
    try (OrderApplication app =
        OrderApplication.start(
            AppSettings.builder()
                .jdbcUrl(db.jdbcUrl())
                .schema(schema)
                .topic(topic)
                .broker(broker)
                .port(0)
                .relayConfig(RelayConfig.builder().pollInterval(Duration.ofMillis(200)).build())
                .deliveryTimeout(Duration.ofSeconds(5))
                .build())) {
      Http http = new Http(app.baseUri());
      List<String> ids = new ArrayList<>();
      for (int i = 0; i < 10; i++) {
        String id = http.post("/orders", Http.order(name + "-" + i, 2)).json().get("id").asText();
        assertThat(http.post("/orders/" + id + "/payment").status()).isEqualTo(200);
        if (i % 3 == 0) {
          assertThat(http.post("/orders/" + id + "/cancellation").status()).isEqualTo(200);
        }
        ids.add(id);
      }
      Eventually.until(
          Duration.ofSeconds(60),
          () -> Db.ordersNotCaughtUp(db, schema) == 0,
          () -> "orders not caught up: " + Db.ordersNotCaughtUp(db, schema));
      for (int i = 0; i < ids.size(); i++) {
        Http.Reply shipment = http.get("/shipments/" + ids.get(i));
        assertThat(shipment.status()).isEqualTo(200);
        assertThat(shipment.json().get("shipmentsForOrder").asInt()).isEqualTo(1);
        assertThat(shipment.json().get("status").asText())
            .isEqualTo(i % 3 == 0 ? "CANCELLED" : "READY");
      }
      assertThat(app.shipping().orderingErrorCount()).isZero();
      assertThat(http.get("/health").status()).isEqualTo(200);
    } finally {
      db.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
      removeBrokerObjects(broker, topic);
    }
  }

  /** Deletes the exchange and queue, or the stream, this run declared on the shared broker. */
  private static void removeBrokerObjects(BrokerChoice broker, String topic) {
    try {
      if (broker.kind() == BrokerChoice.Kind.RABBITMQ) {
        com.rabbitmq.client.ConnectionFactory factory = new com.rabbitmq.client.ConnectionFactory();
        factory.setUri(broker.address());
        try (com.rabbitmq.client.Connection c = factory.newConnection();
            com.rabbitmq.client.Channel channel = c.createChannel()) {
          channel.queueDelete(topic + ".shipping");
          channel.exchangeDelete(topic);
        }
      } else if (broker.kind() == BrokerChoice.Kind.NATS) {
        io.nats.client.Connection c = io.nats.client.Nats.connect(broker.address());
        try {
          c.jetStreamManagement()
              .deleteStream(topic.toUpperCase(java.util.Locale.ROOT).replace('.', '_'));
        } finally {
          c.close();
        }
      }
    } catch (Exception e) {
      throw new AssertionError("Could not clean up " + topic + " on " + broker.kind(), e);
    }
  }
}

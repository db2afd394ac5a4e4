package dev.pgoutbox.tools.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
import dev.pgoutbox.testing.DeliveryChecker;
import dev.pgoutbox.testing.TcpProxy;
import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.Nats;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

/**
 * The chaos checker's feeds tell "not delivered" from "could not read": a feed that read all the
 * broker holds says so, and one that cannot read (subscription cancelled, stream gone, broker not
 * answering) reports a checker error instead of letting the checker count a loss. NATS runs on a
 * nats-server of the test's own; RabbitMQ is the machine's ({@code PGOUTBOX_TEST_RABBITMQ_URI}).
 */
class CheckerFeedIT {

  private static final Duration GRACE = Duration.ofSeconds(20);
  private static final String RABBITMQ =
      System.getenv()
          .getOrDefault("PGOUTBOX_TEST_RABBITMQ_URI", "amqp://guest:guest@127.0.0.1:5672");

  private static byte[] event(String aggregate, int seq) {
    return ("{\"aggregate\":\"" + aggregate + "\",\"seq\":" + seq + "}")
        .getBytes(StandardCharsets.UTF_8);
  }

  private static void publishToNats(NatsChaosBroker broker, int from, int to) throws Exception {
    Connection c = Nats.connect(broker.url());
    try {
      JetStream js = c.jetStream();
      for (int seq = from; seq <= to; seq++) {
        js.publish(NatsChaosBroker.PREFIX + ".a", event("a", seq));
      }
    } finally {
      c.close();
    }
  }

  @Test
  void natsFeedThatReadTheWholeStreamSaysSo() throws Exception {
    try (NatsChaosBroker broker = NatsChaosBroker.start()) {
      DeliveryChecker checker = new DeliveryChecker();
      try (CheckerFeed feed = broker.consume(checker)) {
        publishToNats(broker, 1, 50);

        assertThat(feed.readError(GRACE)).isNull();
        assertThat(checker.delivered()).isEqualTo(50);
        assertThat(checker.missing(Map.of("a", 50))).isZero();
      }
    }
  }

  /**
   * The cause of the chaos run's false losses: a checker connection that still reports itself
   * connected but gets no answer (jnats after a reconnect; here a blackholed TCP path). The feed
   * replaces the connection and reads on.
   */
  @Test
  void natsFeedReplacesAConnectionThatStoppedAnswering() throws Exception {
    try (NatsChaosBroker broker = NatsChaosBroker.start();
        TcpProxy path = TcpProxy.to(broker.port())) {
      DeliveryChecker checker = new DeliveryChecker();
      try (CheckerFeed feed = broker.consume(checker, "nats://127.0.0.1:" + path.port())) {
        publishToNats(broker, 1, 1);
        assertThat(CheckerFeed.await(() -> checker.delivered() == 1, GRACE)).isTrue();

        path.blackhole();
        publishToNats(broker, 2, 20);
        path.restore();

        assertThat(feed.readError(GRACE)).isNull();
        assertThat(checker.delivered()).isEqualTo(20);
        assertThat((Long) feed.figures().get("checker_reconnects")).isPositive();
      }
    }
  }

  @Test
  void natsMessageTheStreamNoLongerHoldsCountsAsNotDeliveredNotAsACheckerError() throws Exception {
    try (NatsChaosBroker broker = NatsChaosBroker.start()) {
      publishToNats(broker, 1, 3);
      Connection admin = Nats.connect(broker.url());
      try {
        assertThat(admin.jetStreamManagement().deleteMessage(NatsChaosBroker.STREAM, 2)).isTrue();
      } finally {
        admin.close();
      }
      DeliveryChecker checker = new DeliveryChecker();
      try (CheckerFeed feed = broker.consume(checker)) {
        publishToNats(broker, 4, 4);

        assertThat(feed.readError(GRACE)).isNull();
        assertThat(checker.delivered()).isEqualTo(3);
        assertThat(checker.missing(Map.of("a", 4))).isEqualTo(1);
        assertThat(feed.figures()).containsEntry("checker_skipped", 1L);
      }
    }
  }

  @Test
  void natsStreamThatIsGoneIsACheckerError() throws Exception {
    try (NatsChaosBroker broker = NatsChaosBroker.start()) {
      DeliveryChecker checker = new DeliveryChecker();
      try (CheckerFeed feed = broker.consume(checker)) {
        Connection admin = Nats.connect(broker.url());
        try {
          admin.jetStreamManagement().deleteStream(NatsChaosBroker.STREAM);
        } finally {
          admin.close();
        }

        assertThat(CheckerFeed.await(feed::failed, GRACE)).isTrue();
        assertThat(feed.readError(GRACE)).contains("stream PGOUTBOX_CHAOS is gone");
      }
    }
  }

  @Test
  void natsServerThatDoesNotAnswerTheVerdictIsACheckerError() throws Exception {
    try (NatsChaosBroker broker = NatsChaosBroker.start()) {
      DeliveryChecker checker = new DeliveryChecker();
      try (CheckerFeed feed = broker.consume(checker)) {
        broker.interrupt();

        assertThat(feed.readError(Duration.ofSeconds(1)))
            .startsWith("could not ask nats-server for stream PGOUTBOX_CHAOS's state");
      }
    }
  }

  @Test
  void rabbitMqFeedReadsEverythingAndACancelledSubscriptionIsACheckerError() throws Exception {
    try (RabbitMqChaosBroker broker = RabbitMqChaosBroker.start(RABBITMQ)) {
      DeliveryChecker checker = new DeliveryChecker();
      String exchange = broker.relayArguments().get(3);
      ConnectionFactory factory = new ConnectionFactory();
      factory.setUri(RABBITMQ);
      try (CheckerFeed feed = broker.consume(checker);
          com.rabbitmq.client.Connection connection = factory.newConnection();
          Channel channel = connection.createChannel()) {
        channel.confirmSelect();
        for (int seq = 1; seq <= 5; seq++) {
          channel.basicPublish(exchange, "a", null, event("a", seq));
        }
        // Confirmed: routed to the checker's queue. Then wait for the consumer to take them all
        // (a busy machine hands them over some milliseconds later).
        channel.waitForConfirmsOrDie(GRACE.toMillis());
        assertThat(CheckerFeed.await(() -> checker.delivered() == 5, GRACE)).isTrue();
        assertThat(feed.readError(GRACE)).isNull();

        channel.queueDelete(((RabbitMqChaosBroker.QueueFeed) feed).queue());

        assertThat(CheckerFeed.await(feed::failed, GRACE)).isTrue();
        assertThat(feed.readError(GRACE)).contains("cancelled the checker's subscription");
      }
    }
  }

  @Test
  void kafkaFeedReadsToTheEndOffsetsAndABrokerThatDoesNotAnswerIsACheckerError() throws Exception {
    try (KafkaChaosBroker broker = KafkaChaosBroker.start()) {
      DeliveryChecker checker = new DeliveryChecker();
      try (CheckerFeed feed = broker.consume(checker);
          KafkaProducer<byte[], byte[]> producer =
              new KafkaProducer<>(
                  Map.<String, Object>of(
                      ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.relayArguments().get(1)),
                  new ByteArraySerializer(),
                  new ByteArraySerializer())) {
        for (int seq = 1; seq <= 5; seq++) {
          producer.send(new ProducerRecord<>(KafkaChaosBroker.TOPIC, event("a", seq))).get();
        }

        assertThat(feed.readError(GRACE)).isNull();
        assertThat(checker.delivered()).isEqualTo(5);

        broker.interrupt();

        assertThat(feed.readError(Duration.ofSeconds(1)))
            .startsWith("could not ask Kafka for the end offsets of pgoutbox-chaos");
      }
    }
  }
}

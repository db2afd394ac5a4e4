package dev.pgoutbox.relay.brokers;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.sun.net.httpserver.HttpServer;
import dev.pgoutbox.db.testing.TestSchema;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.kafka.KafkaPublisher;
import dev.pgoutbox.relay.nats.NatsPublisher;
import dev.pgoutbox.relay.nats.NatsRouting;
import dev.pgoutbox.relay.rabbitmq.AmqpRouting;
import dev.pgoutbox.relay.rabbitmq.RabbitMqPublisher;
import dev.pgoutbox.relay.webhook.WebhookPublisher;
import io.nats.client.JetStreamManagement;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Duration;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Throughput of each publisher, printed as figures, never asserted: 100,000 events over 10,000
 * aggregates, (1) handed straight to the publisher in batches of 500, (2) drained from the real
 * outbox table by 2 strict relays with batches of 500. Runs only when asked:
 *
 * <pre>
 * PGOUTBOX_TEST_JDBC_URL=... mvn -B verify -pl outbox-relay -am -Dtest=NONE \
 *   -Dit.test=PublisherThroughputIT -Dpgoutbox.bench=true -Dsurefire.failIfNoSpecifiedTests=false
 * </pre>
 *
 * Each run still checks that every event was published, so a broken publisher cannot report a
 * figure.
 */
@EnabledIfSystemProperty(named = "pgoutbox.bench", matches = "true")
class PublisherThroughputIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated(8);

  static final int AGGREGATES = 10_000;
  static final int PER_AGGREGATE = 10;
  static final int BATCH = 500;

  @Test
  void kafka() throws Exception {
    try (EmbeddedKafka kafka = EmbeddedKafka.start()) {
      kafka.createTopic("bench", 8);
      kafka.createTopic("benchrelay", 8);
      try (KafkaPublisher p = KafkaPublisher.builder(kafka.bootstrapServers()).build()) {
        measure("kafka", "bench", p);
      }
      try (KafkaPublisher p = KafkaPublisher.builder(kafka.bootstrapServers()).build()) {
        measureRelay("kafka", "benchrelay", p);
      }
    }
  }

  @Test
  void rabbitmq() throws Exception {
    ConnectionFactory f = new ConnectionFactory();
    f.setHost("127.0.0.1");
    try (Connection admin = f.newConnection();
        Channel ch = admin.createChannel()) {
      String exchange = "pgoutbox.bench." + UUID.randomUUID();
      ch.exchangeDeclare(exchange, BuiltinExchangeType.TOPIC, false, true, null);
      String queue = ch.queueDeclare("", false, true, true, null).getQueue();
      ch.queueBind(queue, exchange, "#");
      try (RabbitMqPublisher p =
          RabbitMqPublisher.builder(f, AmqpRouting.byEventType(exchange)).build()) {
        measure("rabbitmq", "bench", p);
        ch.queuePurge(queue);
        measureRelay("rabbitmq", "benchrelay", p);
      }
    }
  }

  @Test
  void nats() throws Exception {
    io.nats.client.Connection admin = Nats.connect("nats://127.0.0.1:4222");
    String prefix = "pgoutbox-bench-" + UUID.randomUUID().toString().substring(0, 8);
    JetStreamManagement jsm = admin.jetStreamManagement();
    jsm.addStream(
        StreamConfiguration.builder()
            .name(prefix)
            .subjects(prefix + ".>")
            .storageType(StorageType.File)
            .build());
    try (NatsPublisher p =
        NatsPublisher.builder(
                new Options.Builder().server("nats://127.0.0.1:4222").maxReconnects(-1).build())
            .routing(NatsRouting.byTypes(prefix))
            .build()) {
      measure("nats", "bench", p);
      measureRelay("nats", "benchrelay", p);
    } finally {
      jsm.deleteStream(prefix);
      admin.close();
    }
  }

  @Test
  void webhook() throws Exception {
    ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
    HttpServer server =
        HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 500);
    server.setExecutor(executor);
    AtomicLong received = new AtomicLong();
    server.createContext(
        "/hook",
        exchange -> {
          exchange.getRequestBody().readAllBytes();
          received.incrementAndGet();
          exchange.sendResponseHeaders(204, -1);
          exchange.close();
        });
    server.start();
    try (WebhookPublisher p =
        WebhookPublisher.builder(
                URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/hook"))
            .maxConcurrency(64)
            .build()) {
      measure("webhook", "bench", p);
      measureRelay("webhook", "benchrelay", p);
    } finally {
      server.stop(0);
      executor.shutdownNow();
    }
  }

  private static void measure(String broker, String type, Publisher publisher) throws Exception {
    TestEvents events = TestEvents.of(type, AGGREGATES, PER_AGGREGATE, BATCH);
    long start = System.nanoTime();
    Drain drain = new Drain().all(publisher, events.batches(), Duration.ofMinutes(10));
    report(
        broker,
        "publisher only, batches of " + BATCH,
        events.size(),
        System.nanoTime() - start,
        drain.retryable());
  }

  private static void measureRelay(String broker, String type, Publisher publisher)
      throws Exception {
    TestEvents events = TestEvents.of(type, AGGREGATES, PER_AGGREGATE, BATCH);
    RelayDrive drive = new RelayDrive(db).truncate().write(events.all());
    Duration took = drive.drain(publisher, 2, BATCH, Duration.ofMinutes(15));
    assertThat(drive.processed()).isEqualTo(events.size());
    report(
        broker,
        "2 strict relays, batch " + BATCH + ", from PostgreSQL",
        events.size(),
        took.toNanos(),
        0);
  }

  private static void report(String broker, String how, int events, long nanos, int retryable) {
    double seconds = nanos / 1e9;
    System.out.printf(
        Locale.ROOT,
        "BENCH %-8s %-45s %,d events in %.1f s = %,.0f events/s (retryable answers: %d)%n",
        broker,
        how,
        events,
        seconds,
        events / seconds,
        retryable);
  }
}

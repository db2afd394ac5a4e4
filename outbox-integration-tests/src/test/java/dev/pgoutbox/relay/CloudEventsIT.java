package dev.pgoutbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.Delivery;
import com.rabbitmq.client.GetResponse;
import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpServer;
import dev.pgoutbox.core.consumer.CloudEvent;
import dev.pgoutbox.core.consumer.KafkaCloudEvents;
import dev.pgoutbox.core.consumer.NatsCloudEvents;
import dev.pgoutbox.core.consumer.RabbitMqCloudEvents;
import dev.pgoutbox.core.consumer.WebhookCloudEvents;
import dev.pgoutbox.relay.brokers.RelayDrive;
import dev.pgoutbox.relay.brokers.TestEvents;
import dev.pgoutbox.relay.kafka.KafkaPublisher;
import dev.pgoutbox.relay.nats.NatsPublisher;
import dev.pgoutbox.relay.nats.NatsRouting;
import dev.pgoutbox.relay.rabbitmq.RabbitMqPublisher;
import dev.pgoutbox.relay.rabbitmq.RabbitMqRouting;
import dev.pgoutbox.relay.testing.KafkaReadBack;
import dev.pgoutbox.relay.testing.NatsReadBack;
import dev.pgoutbox.relay.testing.RabbitReadBack;
import dev.pgoutbox.relay.webhook.WebhookPublisher;
import dev.pgoutbox.testing.EmbeddedKafka;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import io.cloudevents.http.HttpMessageFactory;
import io.cloudevents.kafka.KafkaMessageFactory;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.Nats;
import io.nats.client.Options;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The CloudEvents envelope on each real broker, from the real outbox table through a real relay:
 * the attributes arrive under the names of each protocol binding and read back as the event, with
 * pgoutbox's readers and, for Kafka and HTTP, with the CloudEvents Java SDK's own readers. (The
 * SDK's AMQP binding is for AMQP 1.0 (Proton) messages and it has no NATS binding, so RabbitMQ and
 * NATS are checked by header name against the bindings.)
 */
@SuppressWarnings("try") // io.nats.client.Connection.close() may throw InterruptedException.
class CloudEventsIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  static final String SOURCE = "/orders-service";
  static final String PAYLOAD = "{\"aggregate\":\"a-1\",\"seq\":1}";
  static final ObjectMapper JSON = new ObjectMapper();

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
  void kafkaRecordIsABinaryModeCloudEvent() throws Exception {
    kafka.createTopic("ceorder", 1);
    OutboxMessage event =
        publishOne(
            "ceorder",
            () ->
                KafkaPublisher.builder(kafka.bootstrapServers())
                    .cloudEvents(CloudEvents.binary(SOURCE))
                    .build());
    try (KafkaConsumer<String, byte[]> consumer =
        KafkaReadBack.consumer(kafka.bootstrapServers(), "ce")) {
      consumer.subscribe(List.of("ceorder"));
      ConsumerRecord<String, byte[]> record = KafkaReadBack.awaitFirst(consumer, "the record");
      assertThat(text(record, "ce_specversion")).isEqualTo("1.0");
      assertThat(text(record, "content-type")).isEqualTo("application/json");
      assertEvent(KafkaCloudEvents.read(record), event, "application/json");
      assertSdkReads(KafkaMessageFactory.createReader(record).toEvent(), event);
    }
  }

  @Test
  void rabbitMqMessageIsABinaryModeCloudEventWithAmqpBindingNames() throws Exception {
    ConnectionFactory factory = RabbitReadBack.localFactory();
    try (com.rabbitmq.client.Connection connection = factory.newConnection("cloudevents-it");
        Channel channel = connection.createChannel()) {
      String exchange = "pgoutbox.test.cloudevents." + UUID.randomUUID();
      String queue = RabbitReadBack.boundQueue(channel, exchange);
      OutboxMessage event =
          publishOne(
              "order",
              () ->
                  RabbitMqPublisher.builder(factory, RabbitMqRouting.byEventType(exchange))
                      .cloudEvents(CloudEvents.binary(SOURCE))
                      .build());
      GetResponse[] got = new GetResponse[1];
      Eventually.await(
          "the message",
          Duration.ofSeconds(30),
          () -> {
            try {
              got[0] = channel.basicGet(queue, true);
            } catch (java.io.IOException e) {
              throw new IllegalStateException(e);
            }
            return got[0] != null;
          });
      assertThat(String.valueOf(got[0].getProps().getHeaders().get("cloudEvents:specversion")))
          .isEqualTo("1.0");
      Delivery delivery = new Delivery(got[0].getEnvelope(), got[0].getProps(), got[0].getBody());
      assertEvent(RabbitMqCloudEvents.read(delivery), event, "application/json");
    }
  }

  @Test
  void natsMessageIsABinaryModeCloudEvent() throws Exception {
    Options options = new Options.Builder().server("nats://127.0.0.1:4222").build();
    try (io.nats.client.Connection connection = Nats.connect(options)) {
      String prefix = "pgoutbox-ce-" + UUID.randomUUID().toString().substring(0, 8);
      NatsReadBack.addStream(connection, prefix);
      try {
        JetStreamSubscription sub = NatsReadBack.subscribeOrdered(connection, prefix);
        OutboxMessage event =
            publishOne(
                "order",
                () ->
                    NatsPublisher.builder(options)
                        .routing(NatsRouting.byTypes(prefix))
                        .cloudEvents(CloudEvents.binary(SOURCE))
                        .build());
        Message message = sub.nextMessage(Duration.ofSeconds(30));
        assertThat(message).isNotNull();
        assertThat(message.getHeaders().getFirst("ce-specversion")).isEqualTo("1.0");
        assertEvent(NatsCloudEvents.read(message), event, "application/json");
      } finally {
        connection.jetStreamManagement().deleteStream(prefix);
      }
    }
  }

  @Test
  void webhookRequestIsABinaryModeCloudEvent() throws Exception {
    ConcurrentLinkedQueue<Received> received = new ConcurrentLinkedQueue<>();
    HttpServer server = receiver(received);
    try {
      OutboxMessage event = publishOne("order", () -> webhook(server, CloudEvents.binary(SOURCE)));
      Received request = received.peek();
      assertThat(request.headers().getFirst("ce-specversion")).isEqualTo("1.0");
      assertThat(JSON.readTree(request.body())).isEqualTo(JSON.readTree(PAYLOAD));
      assertEvent(
          WebhookCloudEvents.read(request.headers(), request.body()), event, "application/json");
      assertSdkReads(
          HttpMessageFactory.createReaderFromMultimap(request.headers(), request.body()).toEvent(),
          event);
    } finally {
      server.stop(0);
    }
  }

  @Test
  void webhookRequestIsAStructuredModeCloudEvent() throws Exception {
    ConcurrentLinkedQueue<Received> received = new ConcurrentLinkedQueue<>();
    HttpServer server = receiver(received);
    try {
      OutboxMessage event =
          publishOne("order", () -> webhook(server, CloudEvents.structured(SOURCE)));
      Received request = received.peek();
      assertThat(request.headers().getFirst("Content-Type"))
          .isEqualTo("application/cloudevents+json; charset=UTF-8");
      assertThat(request.headers().getFirst("ce-id")).isNull();
      JsonNode body = JSON.readTree(request.body());
      assertThat(body.get("specversion").asText()).isEqualTo("1.0");
      assertThat(body.get("id").asText()).isEqualTo(event.id().toString());
      assertThat(body.get("data")).isEqualTo(JSON.readTree(PAYLOAD));
      assertEvent(
          WebhookCloudEvents.read(request.headers(), request.body()), event, "application/json");
      assertSdkReads(
          HttpMessageFactory.createReaderFromMultimap(request.headers(), request.body()).toEvent(),
          event);
    } finally {
      server.stop(0);
    }
  }

  @Test
  void sourceMustBeAUriReferenceAndStructuredModeIsForTheWebhookOnly() {
    assertThatThrownBy(() -> CloudEvents.binary(" "))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("source must be a non-empty URI-reference");
    assertThatThrownBy(() -> CloudEvents.binary("not a uri"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("source must be a URI-reference");
    assertThatThrownBy(
            () -> KafkaPublisher.builder("127.0.0.1:1").cloudEvents(CloudEvents.structured(SOURCE)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("structured mode is for the webhook and NATS publishers");
  }

  interface PublisherFactory {
    Publisher create() throws Exception;
  }

  /** Writes one event to the real outbox and drains it through a relay with the publisher. */
  private static OutboxMessage publishOne(String type, PublisherFactory factory) throws Exception {
    OutboxMessage event = TestEvents.one(type, "a-1", 1, PAYLOAD);
    RelayDrive drive = new RelayDrive(db).truncate().write(List.of(event));
    Publisher publisher = factory.create();
    try {
      drive.drain(publisher, 1, 10, Duration.ofMinutes(1));
    } finally {
      publisher.close();
    }
    drive.assertAllPublishedBut(0);
    return event;
  }

  private static void assertEvent(CloudEvent ce, OutboxMessage event, String contentType) {
    assertThat(ce.specVersion()).isEqualTo("1.0");
    assertThat(ce.id()).isEqualTo(event.id().toString());
    assertThat(ce.eventId()).isEqualTo(event.id());
    assertThat(ce.source()).isEqualTo(SOURCE);
    assertThat(ce.type()).isEqualTo(event.eventType());
    assertThat(ce.subject()).isEqualTo(event.aggregateId());
    assertThat(ce.time()).isBetween(OffsetDateTime.now().minusMinutes(5), OffsetDateTime.now());
    assertThat(ce.dataContentType()).startsWith(contentType);
    try {
      assertThat(JSON.readTree(ce.data())).isEqualTo(JSON.readTree(PAYLOAD));
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  /** The CloudEvents SDK's own reader (not pgoutbox code) parsed the event. */
  private static void assertSdkReads(io.cloudevents.CloudEvent ce, OutboxMessage event) {
    assertThat(ce.getSpecVersion().toString()).isEqualTo("1.0");
    assertThat(ce.getId()).isEqualTo(event.id().toString());
    assertThat(ce.getSource()).isEqualTo(URI.create(SOURCE));
    assertThat(ce.getType()).isEqualTo(event.eventType());
    assertThat(ce.getSubject()).isEqualTo(event.aggregateId());
    assertThat(ce.getTime()).isBetween(OffsetDateTime.now().minusMinutes(5), OffsetDateTime.now());
    assertThat(ce.getDataContentType()).startsWith("application/json");
    try {
      assertThat(JSON.readTree(ce.getData().toBytes())).isEqualTo(JSON.readTree(PAYLOAD));
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  record Received(Headers headers, byte[] body) {}

  private static HttpServer receiver(ConcurrentLinkedQueue<Received> received) throws Exception {
    HttpServer server =
        HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext(
        "/events",
        exchange -> {
          received.add(
              new Received(exchange.getRequestHeaders(), exchange.getRequestBody().readAllBytes()));
          exchange.sendResponseHeaders(204, -1);
          exchange.close();
        });
    server.start();
    return server;
  }

  private static WebhookPublisher webhook(HttpServer server, CloudEvents cloudEvents) {
    return WebhookPublisher.builder(
            URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/events"))
        .cloudEvents(cloudEvents)
        .build();
  }

  private static String text(ConsumerRecord<?, ?> r, String header) {
    var h = r.headers().lastHeader(header);
    return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
  }
}

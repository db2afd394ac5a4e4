package dev.pgoutbox.relay.otel;

import static dev.pgoutbox.relay.testing.ExportedSpans.attr;
import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import com.sun.net.httpserver.Headers;
import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.core.consumer.KafkaTraceContext;
import dev.pgoutbox.core.consumer.NatsTraceContext;
import dev.pgoutbox.core.consumer.RabbitMqTraceContext;
import dev.pgoutbox.core.consumer.WebhookTraceContext;
import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.brokers.RelayDrive;
import dev.pgoutbox.relay.kafka.KafkaPublisher;
import dev.pgoutbox.relay.nats.NatsPublisher;
import dev.pgoutbox.relay.nats.NatsRouting;
import dev.pgoutbox.relay.rabbitmq.RabbitMqPublisher;
import dev.pgoutbox.relay.rabbitmq.RabbitMqRouting;
import dev.pgoutbox.relay.testing.ExportedSpans;
import dev.pgoutbox.relay.testing.KafkaReadBack;
import dev.pgoutbox.relay.testing.NatsReadBack;
import dev.pgoutbox.relay.testing.RabbitReadBack;
import dev.pgoutbox.relay.testing.RecordingWebhookReceiver;
import dev.pgoutbox.relay.webhook.WebhookPublisher;
import dev.pgoutbox.testing.EmbeddedKafka;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import io.github.resilience4j.core.IntervalFunction;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * One trace from the request that writes an event to the consumer that handles it, through the real
 * outbox table, a real relay and each real broker: request span, then the relay's PRODUCER span
 * (its child), then the consumer's span (the relay span's child), spans kept in memory by the
 * OpenTelemetry SDK.
 */
// A Scope is opened for its effect (the span is current inside it); NATS close() may throw
// InterruptedException.
@SuppressWarnings("try")
class TracingIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  @RegisterExtension static final ExportedSpans spans = new ExportedSpans();
  static OpenTelemetrySdk otel;
  static Tracer tracer;
  static EmbeddedKafka kafka;

  final RelayDrive drive = new RelayDrive(db);
  Outbox outbox;

  @BeforeAll
  static void setUp() throws Exception {
    otel = spans.openTelemetry();
    tracer = spans.tracer();
    kafka = EmbeddedKafka.start();
  }

  @AfterAll
  static void tearDown() throws Exception {
    kafka.close();
  }

  @BeforeEach
  void reset() {
    db.execute("truncate outbox_events");
    outbox = Outbox.builder().schema(db.schema()).build();
  }

  @Test
  void kafkaConsumerContinuesTheRequestsTrace() throws Exception {
    kafka.createTopic("traced", 1);
    Span request = writeInRequest("traced");
    try (KafkaPublisher publisher = KafkaPublisher.builder(kafka.bootstrapServers()).build()) {
      drain(publisher, OpenTelemetryTracing.create(otel));
    }
    Context received;
    try (KafkaConsumer<String, byte[]> consumer =
        KafkaReadBack.consumer(kafka.bootstrapServers(), "traced")) {
      consumer.subscribe(List.of("traced"));
      received =
          KafkaTraceContext.extract(KafkaReadBack.awaitFirst(consumer, "the record on Kafka"));
    }
    SpanData producer = onlyProducerSpan();
    assertChildOf(producer, request);
    assertThat(producer.getName()).isEqualTo("send traced");
    assertThat(attr(producer, "messaging.system")).isEqualTo("kafka");
    assertThat(attr(producer, "messaging.destination.name")).isEqualTo("traced");
    String bootstrap = kafka.bootstrapServers().split(",")[0];
    assertThat(longAttr(producer, "messaging.kafka.offset")).isNotNull().isNotNegative();
    assertMessagingAttributes(
        producer,
        Map.of(
            "messaging.system", "kafka",
            "messaging.destination.name", "traced",
            "messaging.kafka.message.key", "42",
            "messaging.destination.partition.id", "0",
            "messaging.kafka.offset", longAttr(producer, "messaging.kafka.offset"),
            "messaging.client.id", "pgoutbox-relay",
            "server.address", bootstrap.substring(0, bootstrap.lastIndexOf(':')),
            "server.port", Long.parseLong(bootstrap.substring(bootstrap.lastIndexOf(':') + 1))));
    assertConsumerContinues(received, producer);
  }

  @Test
  void rabbitMqConsumerContinuesTheRequestsTrace() throws Exception {
    ConnectionFactory factory = RabbitReadBack.localFactory();
    try (com.rabbitmq.client.Connection connection = factory.newConnection("tracing-it");
        Channel channel = connection.createChannel()) {
      String exchange = "pgoutbox.test.tracing." + UUID.randomUUID();
      String queue = RabbitReadBack.boundQueue(channel, exchange);
      Span request = writeInRequest("order");
      try (RabbitMqPublisher publisher =
          RabbitMqPublisher.builder(factory, RabbitMqRouting.byEventType(exchange)).build()) {
        drain(publisher, OpenTelemetryTracing.create(otel));
      }
      GetResponse[] got = new GetResponse[1];
      Eventually.await(
          "the message in " + queue,
          Duration.ofSeconds(30),
          () -> {
            try {
              got[0] = channel.basicGet(queue, true);
            } catch (java.io.IOException e) {
              throw new IllegalStateException(e);
            }
            return got[0] != null;
          });
      SpanData producer = onlyProducerSpan();
      assertChildOf(producer, request);
      assertThat(attr(producer, "messaging.system")).isEqualTo("rabbitmq");
      assertThat(attr(producer, "messaging.destination.name")).isEqualTo(exchange);
      assertMessagingAttributes(
          producer,
          Map.of(
              "messaging.system", "rabbitmq",
              "messaging.destination.name", exchange,
              "messaging.rabbitmq.destination.routing_key", "order.created",
              "server.address", "127.0.0.1",
              "server.port", 5672L));
      assertConsumerContinues(RabbitMqTraceContext.extract(got[0].getProps()), producer);
    }
  }

  @Test
  void natsConsumerContinuesTheRequestsTrace() throws Exception {
    Options options = new Options.Builder().server("nats://127.0.0.1:4222").build();
    try (io.nats.client.Connection connection = Nats.connect(options)) {
      String prefix = "pgoutbox-tracing-" + UUID.randomUUID().toString().substring(0, 8);
      NatsReadBack.addStream(connection, prefix);
      try {
        JetStreamSubscription sub = NatsReadBack.subscribeOrdered(connection, prefix);
        Span request = writeInRequest("order");
        try (NatsPublisher publisher =
            NatsPublisher.builder(options).routing(NatsRouting.byTypes(prefix)).build()) {
          drain(publisher, OpenTelemetryTracing.create(otel));
        }
        Message message = sub.nextMessage(Duration.ofSeconds(30));
        assertThat(message).as("the message on " + prefix).isNotNull();
        SpanData producer = onlyProducerSpan();
        assertChildOf(producer, request);
        assertThat(attr(producer, "messaging.system")).isEqualTo("nats");
        assertThat(attr(producer, "messaging.destination.name"))
            .isEqualTo(prefix + ".order.order.created");
        assertMessagingAttributes(
            producer,
            Map.of(
                "messaging.system",
                "nats",
                "messaging.destination.name",
                prefix + ".order.order.created",
                "server.address",
                "127.0.0.1",
                "server.port",
                4222L));
        assertConsumerContinues(NatsTraceContext.extract(message), producer);
      } finally {
        connection.jetStreamManagement().deleteStream(prefix);
      }
    }
  }

  @Test
  void aRetryAfterARelayRestartStaysInTheRequestsTrace() throws Exception {
    AtomicInteger calls = new AtomicInteger();
    try (RecordingWebhookReceiver receiver =
            RecordingWebhookReceiver.answering(() -> calls.incrementAndGet() == 1 ? 503 : 200);
        WebhookPublisher publisher = WebhookPublisher.builder(receiver.endpoint()).build()) {
      Span request = writeInRequest("order");
      // The first relay fails once and goes away; a new relay (a restart) publishes the retry.
      relay(publisher, OpenTelemetryTracing.create(otel)).runOnce();
      assertThat(drive.pending()).isEqualTo(1);
      drain(publisher, OpenTelemetryTracing.create(otel));

      List<SpanData> producers = spans.producers();
      assertThat(producers).hasSize(2);
      SpanData failed = producers.get(0);
      SpanData published = producers.get(1);
      assertChildOf(failed, request);
      assertChildOf(published, request);
      assertThat(failed.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
      assertThat(failed.getStatus().getDescription()).contains("HTTP 503");
      assertThat(attr(failed, "error.type")).isEqualTo("retryable");
      assertThat(attr(failed, "pgoutbox.outcome")).isEqualTo("retry");
      assertThat(longAttr(failed, "pgoutbox.attempt")).isEqualTo(1);
      assertThat(longAttr(failed, "pgoutbox.retry_in_ms")).isNotNull();
      assertThat(attr(published, "pgoutbox.outcome")).isEqualTo("published");
      assertThat(longAttr(published, "pgoutbox.attempt")).isEqualTo(2);
      assertThat(published.getStatus().getStatusCode()).isEqualTo(StatusCode.UNSET);
      assertThat(attr(published, "messaging.system")).isEqualTo("webhook");
      assertThat(attr(published, "messaging.destination.name"))
          .isEqualTo("127.0.0.1:" + receiver.port() + "/events");
      for (SpanData span : producers) {
        assertMessagingAttributes(
            span,
            Map.of(
                "messaging.system",
                "webhook",
                "messaging.destination.name",
                "127.0.0.1:" + receiver.port() + "/events",
                "server.address",
                "127.0.0.1",
                "server.port",
                (long) receiver.port()));
      }

      // Each request carried its own attempt's span; the receiver continues the second one's.
      List<Headers> requests = receiver.requests();
      assertThat(requests).hasSize(2);
      assertThat(requests.get(0).getFirst("traceparent")).contains(failed.getSpanId());
      assertConsumerContinues(WebhookTraceContext.extract(requests.get(1)), published);
    }
  }

  @Test
  void aDeadLetteredEventsSpanSaysSo() throws Exception {
    try (RecordingWebhookReceiver receiver = RecordingWebhookReceiver.answering(() -> 400);
        WebhookPublisher publisher = WebhookPublisher.builder(receiver.endpoint()).build()) {
      Span request = writeInRequest("order");
      drain(publisher, OpenTelemetryTracing.create(otel));
      SpanData dead = onlyProducerSpan();
      assertChildOf(dead, request);
      assertThat(dead.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
      assertThat(dead.getStatus().getDescription()).contains("HTTP 400");
      assertThat(attr(dead, "pgoutbox.outcome")).isEqualTo("dead_lettered");
      assertThat(attr(dead, "error.type")).isEqualTo("permanent");
    }
  }

  @Test
  void linkedSpansStartTheirOwnTraceWithALinkToTheRequest() throws Exception {
    try (RecordingWebhookReceiver receiver = RecordingWebhookReceiver.answering(() -> 200);
        WebhookPublisher publisher = WebhookPublisher.builder(receiver.endpoint()).build()) {
      Span request = writeInRequest("order");
      drain(publisher, OpenTelemetryTracing.builder(otel).linkToStoredContext(true).build());
      SpanData producer = onlyProducerSpan();
      assertThat(producer.getTraceId()).isNotEqualTo(request.getSpanContext().getTraceId());
      assertThat(producer.getParentSpanContext().isValid()).isFalse();
      assertThat(producer.getLinks())
          .extracting(l -> l.getSpanContext().getTraceId() + "/" + l.getSpanContext().getSpanId())
          .containsExactly(
              request.getSpanContext().getTraceId() + "/" + request.getSpanContext().getSpanId());
      assertConsumerContinues(WebhookTraceContext.extract(receiver.firstRequest()), producer);
    }
  }

  @Test
  void withoutTracingTheStoredContextReachesTheConsumerAsItWas() throws Exception {
    try (RecordingWebhookReceiver receiver = RecordingWebhookReceiver.answering(() -> 200);
        WebhookPublisher publisher = WebhookPublisher.builder(receiver.endpoint()).build()) {
      Span request = writeInRequest("order");
      drain(publisher, dev.pgoutbox.relay.PublishTracing.NONE);
      assertThat(spans.producers()).isEmpty();
      assertConsumerContinues(WebhookTraceContext.extract(receiver.firstRequest()), request);
    }
  }

  /** Writes one event of aggregate type {@code type} inside a finished request span. */
  private Span writeInRequest(String type) {
    Span request = tracer.spanBuilder("POST /orders").setSpanKind(SpanKind.SERVER).startSpan();
    try (Scope scope = request.makeCurrent()) {
      db.dsl()
          .transaction(
              tx ->
                  outbox.append(
                      tx.dsl(), OutboxEvent.of(type, "42", "order.created", Map.of("id", 42))));
    } finally {
      request.end();
    }
    return request;
  }

  private OutboxRelay relay(Publisher publisher, dev.pgoutbox.relay.PublishTracing tracing) {
    return OutboxRelay.builder()
        .name("tracing-it")
        .dataSource(db.dataSource())
        .schema(db.schema())
        .publisher(publisher)
        .tracing(tracing)
        .config(
            RelayConfig.builder()
                .batchSize(10)
                .backoff(IntervalFunction.of(Duration.ofMillis(20)))
                .build())
        .build();
  }

  /** Runs batches on a fresh relay until nothing is pending. */
  private void drain(Publisher publisher, dev.pgoutbox.relay.PublishTracing tracing) {
    drive.runUntilDrained(relay(publisher, tracing), Duration.ofMinutes(1));
  }

  private static SpanData onlyProducerSpan() {
    SpanData producer = spans.onlyProducer();
    assertThat(longAttr(producer, "pgoutbox.batch.size")).isEqualTo(1);
    assertThat(attr(producer, "pgoutbox.aggregate.id")).isEqualTo("42");
    return producer;
  }

  private static void assertChildOf(SpanData producer, Span request) {
    assertThat(producer.getTraceId()).isEqualTo(request.getSpanContext().getTraceId());
    assertThat(producer.getParentSpanId()).isEqualTo(request.getSpanContext().getSpanId());
  }

  /** The consumer's span, parented on what it received, is the child of {@code parent}. */
  private static void assertConsumerContinues(Context received, SpanData parent) {
    assertConsumerContinues(received, parent.getTraceId(), parent.getSpanId());
  }

  private static void assertConsumerContinues(Context received, Span parent) {
    assertConsumerContinues(
        received, parent.getSpanContext().getTraceId(), parent.getSpanContext().getSpanId());
  }

  private static void assertConsumerContinues(Context received, String traceId, String spanId) {
    SpanData data = spans.consumerSpan(tracer, received);
    assertThat(data.getTraceId()).isEqualTo(traceId);
    assertThat(data.getParentSpanId()).isEqualTo(spanId);
    assertThat(data.getParentSpanContext().isRemote()).isTrue();
  }

  /**
   * The span's attribute table against the OpenTelemetry messaging conventions: the required
   * ({@code messaging.system}, {@code messaging.operation.name}), the conditionally required and
   * recommended ones the publisher knows ({@code messaging.operation.type}, {@code
   * messaging.destination.name}, {@code messaging.message.id}, {@code server.*}, the broker's own),
   * each with its value and type, and no other {@code messaging.*} or {@code server.*} attribute.
   */
  private static void assertMessagingAttributes(SpanData span, Map<String, Object> brokers) {
    Map<String, Object> expected = new java.util.HashMap<>(brokers);
    expected.put("messaging.operation.name", "send");
    expected.put("messaging.operation.type", "send");
    String id = attr(span, "messaging.message.id");
    assertThat(UUID.fromString(id)).isNotNull();
    expected.put("messaging.message.id", id);
    Map<String, Object> actual = new java.util.HashMap<>();
    span.getAttributes()
        .forEach(
            (key, value) -> {
              if (key.getKey().startsWith("messaging.") || key.getKey().startsWith("server.")) {
                actual.put(key.getKey(), value);
              }
            });
    assertThat(actual).as(span.getName()).isEqualTo(expected);
  }

  private static Long longAttr(SpanData span, String key) {
    return span.getAttributes().get(AttributeKey.longKey(key));
  }
}

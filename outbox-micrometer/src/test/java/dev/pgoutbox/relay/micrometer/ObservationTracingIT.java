package dev.pgoutbox.relay.micrometer;

import static dev.pgoutbox.relay.testing.ExportedSpans.attr;
import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import com.sun.net.httpserver.Headers;
import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.core.consumer.NatsTraceContext;
import dev.pgoutbox.core.consumer.RabbitMqTraceContext;
import dev.pgoutbox.core.consumer.WebhookTraceContext;
import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.PublishTracing;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.brokers.RelayDrive;
import dev.pgoutbox.relay.nats.NatsPublisher;
import dev.pgoutbox.relay.nats.NatsRouting;
import dev.pgoutbox.relay.rabbitmq.RabbitMqPublisher;
import dev.pgoutbox.relay.rabbitmq.RabbitMqRouting;
import dev.pgoutbox.relay.testing.ExportedSpans;
import dev.pgoutbox.relay.testing.NatsReadBack;
import dev.pgoutbox.relay.testing.RabbitReadBack;
import dev.pgoutbox.relay.testing.RecordingWebhookReceiver;
import dev.pgoutbox.relay.webhook.WebhookPublisher;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import io.github.resilience4j.core.IntervalFunction;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.handler.DefaultTracingObservationHandler;
import io.micrometer.tracing.handler.PropagatingReceiverTracingObservationHandler;
import io.micrometer.tracing.handler.PropagatingSenderTracingObservationHandler;
import io.micrometer.tracing.otel.bridge.OtelCurrentTraceContext;
import io.micrometer.tracing.otel.bridge.OtelPropagator;
import io.micrometer.tracing.otel.bridge.OtelTracer;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.context.Context;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.trace.data.EventData;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The Micrometer Observation bridge with micrometer-tracing on the OpenTelemetry SDK, set up as
 * Spring Boot sets it up (the sender, receiver and default tracing handlers in a registry, W3C
 * propagation): a request observation writes an event, the relay's observation continues its trace
 * and carries it to the real broker, and the consumer's span, parented with the broker's {@code
 * *TraceContext} helper, is the relay span's child. Spans are kept in memory by the SDK.
 */
// Observation.Scope is opened for its effect; NATS close() may throw InterruptedException.
@SuppressWarnings("try")
class ObservationTracingIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  @RegisterExtension static final ExportedSpans spans = new ExportedSpans();
  static OpenTelemetrySdk otel;
  static Tracer tracer;
  static ObservationRegistry registry;

  final RelayDrive drive = new RelayDrive(db);
  Outbox outbox;

  @BeforeAll
  static void micrometerTracingOnTheOpenTelemetrySdk() {
    otel = spans.openTelemetry();
    io.opentelemetry.api.trace.Tracer otelTracer = otel.getTracer("observation-tracing-it");
    tracer = new OtelTracer(otelTracer, new OtelCurrentTraceContext(), event -> {});
    OtelPropagator propagator = new OtelPropagator(otel.getPropagators(), otelTracer);
    registry = ObservationRegistry.create();
    registry
        .observationConfig()
        .observationHandler(
            new ObservationHandler.FirstMatchingCompositeObservationHandler(
                List.of(
                    new PropagatingSenderTracingObservationHandler<>(tracer, propagator),
                    new PropagatingReceiverTracingObservationHandler<>(tracer, propagator),
                    new DefaultTracingObservationHandler(tracer))));
  }

  @BeforeEach
  void reset() {
    db.execute("truncate outbox_events");
    outbox = Outbox.builder().schema(db.schema()).build();
  }

  @Test
  void rabbitMqConsumerContinuesTheRequestsTraceThroughTheRelaysObservation() throws Exception {
    ConnectionFactory factory = RabbitReadBack.localFactory();
    try (com.rabbitmq.client.Connection connection = factory.newConnection("observation-it");
        Channel channel = connection.createChannel()) {
      String exchange = "pgoutbox.test.observation." + UUID.randomUUID();
      String queue = RabbitReadBack.boundQueue(channel, exchange);
      SpanData request = writeInRequest();
      try (RabbitMqPublisher publisher =
          RabbitMqPublisher.builder(factory, RabbitMqRouting.byEventType(exchange)).build()) {
        drain(publisher, parented());
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
      assertThat(producer.getName()).isEqualTo("send " + exchange);
      assertThat(attr(producer, "messaging.system")).isEqualTo("rabbitmq");
      assertThat(attr(producer, "messaging.destination.name")).isEqualTo(exchange);
      assertThat(attr(producer, "messaging.message.id"))
          .isEqualTo(got[0].getProps().getMessageId());
      assertThat(attr(producer, "pgoutbox.outcome")).isEqualTo("published");
      assertThat(attr(producer, "error.type")).isEqualTo("none");
      assertThat(producer.getStatus().getStatusCode()).isEqualTo(StatusCode.UNSET);
      assertConsumerContinues(RabbitMqTraceContext.extract(got[0].getProps()), producer);
    }
  }

  @Test
  void natsConsumerContinuesTheRequestsTraceThroughTheRelaysObservation() throws Exception {
    Options options = new Options.Builder().server("nats://127.0.0.1:4222").build();
    try (io.nats.client.Connection connection = Nats.connect(options)) {
      String prefix = "pgoutbox-observation-" + UUID.randomUUID().toString().substring(0, 8);
      NatsReadBack.addStream(connection, prefix);
      try {
        JetStreamSubscription sub = NatsReadBack.subscribeOrdered(connection, prefix);
        SpanData request = writeInRequest();
        try (NatsPublisher publisher =
            NatsPublisher.builder(options).routing(NatsRouting.byTypes(prefix)).build()) {
          drain(publisher, parented());
        }
        Message message = sub.nextMessage(Duration.ofSeconds(30));
        assertThat(message).as("the message on " + prefix).isNotNull();
        SpanData producer = onlyProducerSpan();
        assertChildOf(producer, request);
        assertThat(attr(producer, "messaging.system")).isEqualTo("nats");
        assertThat(attr(producer, "messaging.destination.name"))
            .isEqualTo(prefix + ".order.order.created");
        assertConsumerContinues(NatsTraceContext.extract(message), producer);
      } finally {
        connection.jetStreamManagement().deleteStream(prefix);
      }
    }
  }

  @Test
  void aRetryRecordsTheErrorAndTheNextAttemptIsASecondChildOfTheRequest() throws Exception {
    AtomicInteger calls = new AtomicInteger();
    try (RecordingWebhookReceiver receiver =
            RecordingWebhookReceiver.answering(() -> calls.incrementAndGet() == 1 ? 503 : 200);
        WebhookPublisher publisher = WebhookPublisher.builder(receiver.endpoint()).build()) {
      SpanData request = writeInRequest();
      drain(publisher, parented());

      List<SpanData> producers = spans.producers();
      assertThat(producers).hasSize(2);
      SpanData failed = producers.get(0);
      SpanData published = producers.get(1);
      assertChildOf(failed, request);
      assertChildOf(published, request);
      assertThat(failed.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
      assertThat(failed.getStatus().getDescription()).contains("HTTP 503");
      assertThat(failed.getEvents())
          .extracting(EventData::getName)
          .as("the error recorded on the observation, as an exception event")
          .contains("exception");
      assertThat(
              failed
                  .getEvents()
                  .get(0)
                  .getAttributes()
                  .get(AttributeKey.stringKey("exception.type")))
          .isEqualTo(PublishFailedException.class.getName());
      assertThat(attr(failed, "pgoutbox.outcome")).isEqualTo("retry");
      assertThat(attr(failed, "error.type")).isEqualTo("retryable");
      assertThat(attr(failed, "pgoutbox.attempt")).isEqualTo("1");
      assertThat(attr(failed, "pgoutbox.retry_in_ms")).isNotBlank();
      assertThat(attr(published, "pgoutbox.outcome")).isEqualTo("published");
      assertThat(attr(published, "pgoutbox.attempt")).isEqualTo("2");
      assertThat(attr(published, "messaging.message.id"))
          .isEqualTo(attr(failed, "messaging.message.id"));
      assertThat(published.getStatus().getStatusCode()).isEqualTo(StatusCode.UNSET);

      // Each request carried its own attempt's span; the receiver continues the second one's.
      List<Headers> requests = receiver.requests();
      assertThat(requests).hasSize(2);
      assertThat(requests.get(0).getFirst("traceparent")).contains(failed.getSpanId());
      assertConsumerContinues(WebhookTraceContext.extract(requests.get(1)), published);
    }
  }

  @Test
  void linkedObservationsStartATraceOfTheirOwnAndNameTheStoredContext() throws Exception {
    try (RecordingWebhookReceiver receiver = RecordingWebhookReceiver.answering(() -> 200);
        WebhookPublisher publisher = WebhookPublisher.builder(receiver.endpoint()).build()) {
      SpanData request = writeInRequest();
      drain(
          publisher,
          ObservationTracing.builder(registry).tracer(tracer).linkToStoredContext(true).build());
      SpanData producer = onlyProducerSpan();
      assertThat(producer.getTraceId()).isNotEqualTo(request.getTraceId());
      assertThat(producer.getParentSpanContext().isValid()).isFalse();
      // The flags may carry more than the sampled bit (W3C level 2's random trace id).
      assertThat(attr(producer, "pgoutbox.link.traceparent"))
          .startsWith("00-" + request.getTraceId() + "-" + request.getSpanId() + "-");
      assertConsumerContinues(WebhookTraceContext.extract(receiver.firstRequest()), producer);
    }
  }

  @Test
  void withoutHandlersTheStoredContextReachesTheConsumerAsItWas() throws Exception {
    try (RecordingWebhookReceiver receiver = RecordingWebhookReceiver.answering(() -> 200);
        WebhookPublisher publisher = WebhookPublisher.builder(receiver.endpoint()).build()) {
      SpanData request = writeInRequest();
      // A registry nothing was registered in is a no-op registry: no observation, no span.
      drain(publisher, ObservationTracing.create(ObservationRegistry.create()));
      drain(publisher, ObservationTracing.builder(ObservationRegistry.NOOP).tracer(tracer).build());
      assertThat(spans.producers()).isEmpty();
      assertConsumerContinues(WebhookTraceContext.extract(receiver.firstRequest()), request);
    }
  }

  private static ObservationTracing parented() {
    return ObservationTracing.builder(registry).tracer(tracer).build();
  }

  /**
   * Writes one event inside a request observation, as a web framework's server observation would
   * (the tracing handler makes its span current in the scope, where the writer reads it).
   */
  private SpanData writeInRequest() {
    Observation request = Observation.start("http.server.requests", registry);
    request.contextualName("POST /orders");
    try (Observation.Scope scope = request.openScope()) {
      db.dsl()
          .transaction(
              tx ->
                  outbox.append(
                      tx.dsl(), OutboxEvent.of("order", "42", "order.created", Map.of("id", 42))));
    } finally {
      request.stop();
    }
    return spans.finished().stream()
        .filter(s -> s.getName().equals("POST /orders"))
        .findFirst()
        .orElseThrow();
  }

  /** Runs batches on a fresh relay until nothing is pending. */
  private void drain(Publisher publisher, PublishTracing tracing) {
    OutboxRelay relay =
        OutboxRelay.builder()
            .name("observation-it")
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
    drive.runUntilDrained(relay, Duration.ofMinutes(1));
  }

  private static SpanData onlyProducerSpan() {
    SpanData producer = spans.onlyProducer();
    assertThat(attr(producer, "pgoutbox.batch.size")).isEqualTo("1");
    assertThat(attr(producer, "pgoutbox.aggregate.id")).isEqualTo("42");
    assertThat(attr(producer, "pgoutbox.attempt")).isEqualTo("1");
    return producer;
  }

  private static void assertChildOf(SpanData producer, SpanData request) {
    assertThat(producer.getTraceId()).isEqualTo(request.getTraceId());
    assertThat(producer.getParentSpanId()).isEqualTo(request.getSpanId());
  }

  /** The consumer's span, parented on what it received, is the child of {@code parent}. */
  private static void assertConsumerContinues(Context received, SpanData parent) {
    SpanData data = spans.consumerSpan(otel.getTracer("consumer"), received);
    assertThat(data.getTraceId()).isEqualTo(parent.getTraceId());
    assertThat(data.getParentSpanId()).isEqualTo(parent.getSpanId());
  }
}

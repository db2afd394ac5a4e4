package dev.pgoutbox.relay.otel;

import static dev.pgoutbox.relay.testing.ExportedSpans.attr;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.core.consumer.WebhookTraceContext;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.testing.ExportedSpans;
import dev.pgoutbox.relay.testing.RecordingWebhookReceiver;
import dev.pgoutbox.relay.testing.TestWalRelays;
import dev.pgoutbox.relay.wal.WalRelay;
import dev.pgoutbox.relay.webhook.WebhookPublisher;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import io.github.resilience4j.core.IntervalFunction;
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
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A {@link WalRelay} traces as the table relay does, on both of its paths: the reader streaming the
 * slot and the drainer publishing what was parked. Each PRODUCER span is the child of the request
 * that wrote the event, says the event's fate (published, retry, held back) and is what the
 * consumer continues. Real PostgreSQL with {@code wal_level=logical}, a real HTTP receiver, spans
 * kept in memory by the OpenTelemetry SDK.
 */
@SuppressWarnings("try") // a Scope is opened for its effect
class WalTracingIT {

  @RegisterExtension static final TestSchema db = TestSchema.migratedWithLogicalDecoding(4);

  @RegisterExtension static final ExportedSpans spans = new ExportedSpans();
  static OpenTelemetrySdk otel;
  static Tracer tracer;

  private final List<WalRelay> relays = new ArrayList<>();
  private final List<String> slots = new ArrayList<>();

  @BeforeAll
  static void setUp() {
    otel = spans.openTelemetry();
    tracer = spans.tracer();
  }

  @BeforeEach
  void reset() {
    db.execute("truncate outbox_events");
  }

  @AfterEach
  void stopAndDropSlots() {
    relays.forEach(r -> r.stop(Duration.ofSeconds(2)));
    for (String slot : slots) {
      Eventually.await("slot " + slot + " dropped", () -> db.dropReplicationSlot(slot));
    }
  }

  @Test
  void anEventStreamedFromTheSlotIsPublishedInTheRequestsTrace() throws Exception {
    try (RecordingWebhookReceiver receiver = RecordingWebhookReceiver.answering(() -> 200);
        WebhookPublisher publisher = WebhookPublisher.builder(receiver.endpoint()).build()) {
      WalRelay relay = started("trace_stream", publisher);
      Span request = writeInRequest(event("42", 1));

      Eventually.await("the event published", () -> pending() == 0);

      SpanData producer = spans.onlyProducer();
      assertChildOf(producer, request);
      assertThat(attr(producer, "pgoutbox.outcome")).isEqualTo("published");
      assertThat(attr(producer, "messaging.system")).isEqualTo("webhook");
      assertThat(producer.getStatus().getStatusCode()).isEqualTo(StatusCode.UNSET);
      assertConsumerContinues(WebhookTraceContext.extract(receiver.firstRequest()), producer);
      assertThat(relay.hasFallenBack()).isFalse();
    }
  }

  @Test
  void aFailedEventsRetryThroughTheDrainerStaysInTheRequestsTrace() throws Exception {
    AtomicInteger calls = new AtomicInteger();
    try (RecordingWebhookReceiver receiver =
            RecordingWebhookReceiver.answering(() -> calls.incrementAndGet() == 1 ? 503 : 200);
        WebhookPublisher publisher = WebhookPublisher.builder(receiver.endpoint()).build()) {
      started("trace_retry", publisher);
      Span request = writeInRequest(event("42", 1));

      Eventually.await("the retry published", () -> pending() == 0);

      List<SpanData> producers = spans.producers();
      assertThat(producers).hasSize(2);
      SpanData failed = producers.get(0);
      SpanData published = producers.get(1);
      assertChildOf(failed, request);
      assertChildOf(published, request);
      assertThat(attr(failed, "pgoutbox.outcome")).isEqualTo("retry");
      assertThat(attr(failed, "error.type")).isEqualTo("retryable");
      assertThat(failed.getStatus().getDescription()).contains("HTTP 503");
      assertThat(longAttr(failed, "pgoutbox.attempt")).isEqualTo(1);
      assertThat(attr(published, "pgoutbox.outcome")).isEqualTo("published");
      assertThat(longAttr(published, "pgoutbox.attempt")).isEqualTo(2);
      List<com.sun.net.httpserver.Headers> requests = receiver.requests();
      assertThat(requests).hasSize(2);
      assertThat(requests.get(0).getFirst("traceparent")).contains(failed.getSpanId());
      assertConsumerContinues(WebhookTraceContext.extract(requests.get(1)), published);
    }
  }

  @Test
  void anEventHeldBehindItsAggregatesFailureSaysSoAndIsTracedAgainWhenDrained() {
    // The first publish call fails every event; later ones publish.
    List<Integer> callSizes = new CopyOnWriteArrayList<>();
    Publisher publisher =
        batch -> {
          boolean refuse = callSizes.isEmpty();
          callSizes.add(batch.size());
          return CompletableFuture.completedFuture(
              batch.stream()
                  .map(
                      m ->
                          refuse
                              ? PublishResult.retryable("broker says no")
                              : PublishResult.published())
                  .toList());
        };
    started("trace_held", publisher);
    Span request = writeInRequest(event("42", 1), event("42", 2));

    Eventually.await("both published", () -> pending() == 0);

    List<SpanData> producers = spans.producers();
    producers.forEach(p -> assertThat(attr(p, "pgoutbox.aggregate.id")).isEqualTo("42"));
    producers.forEach(p -> assertChildOf(p, request));
    // The reader reads the transaction's two inserts into one batch unless the second reached it
    // after the first was already out (the WAL sender sends each change on its own); then the
    // reader parks the second without a publish, and no span is owed for it there.
    if (callSizes.get(0) == 2) {
      assertThat(producers)
          .extracting(p -> attr(p, "pgoutbox.outcome"))
          .containsExactly("retry", "held_back", "published", "published");
      assertThat(producers.get(1).getStatus().getStatusCode()).isEqualTo(StatusCode.UNSET);
    } else {
      assertThat(producers)
          .extracting(p -> attr(p, "pgoutbox.outcome"))
          .containsExactly("retry", "published", "published");
    }
  }

  private WalRelay started(String slot, Publisher publisher) {
    slots.add(slot);
    WalRelay relay =
        TestWalRelays.builder(db, slot, publisher)
            .name("wal-" + slot.replace('_', '-'))
            .tracing(OpenTelemetryTracing.create(otel))
            .config(
                RelayConfig.builder()
                    .pollInterval(Duration.ofMillis(50))
                    .backoff(IntervalFunction.of(Duration.ofMillis(20)))
                    .build())
            .build();
    relays.add(relay);
    relay.start();
    Eventually.await("the reader attached", relay::isReading);
    return relay;
  }

  /** Writes {@code events} in one transaction inside a request's span. */
  private static Span writeInRequest(OutboxEvent... events) {
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    Span request = tracer.spanBuilder("POST /orders").setSpanKind(SpanKind.SERVER).startSpan();
    try (Scope scope = request.makeCurrent()) {
      db.dsl().transaction(tx -> outbox.appendAll(tx.dsl(), List.of(events)));
    } finally {
      request.end();
    }
    return request;
  }

  private static OutboxEvent event(String aggregate, int seq) {
    return OutboxEvent.of("order", aggregate, "order.step", Map.of("seq", seq));
  }

  private static void assertChildOf(SpanData producer, Span request) {
    assertThat(producer.getTraceId()).isEqualTo(request.getSpanContext().getTraceId());
    assertThat(producer.getParentSpanId()).isEqualTo(request.getSpanContext().getSpanId());
  }

  private static void assertConsumerContinues(Context received, SpanData parent) {
    SpanData consumer = spans.consumerSpan(tracer, received);
    assertThat(consumer.getTraceId()).isEqualTo(parent.getTraceId());
    assertThat(consumer.getParentSpanId()).isEqualTo(parent.getSpanId());
  }

  private static Long longAttr(SpanData span, String key) {
    return span.getAttributes().get(AttributeKey.longKey(key));
  }

  private static long pending() {
    return db.queryLong("select count(*) from outbox_events where processed_at is null");
  }
}

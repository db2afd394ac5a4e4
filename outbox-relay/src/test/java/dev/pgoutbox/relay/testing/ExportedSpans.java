package dev.pgoutbox.relay.testing;

import static org.assertj.core.api.Assertions.assertThat;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * An OpenTelemetry SDK whose spans are kept in memory for a test class (W3C propagation; emptied
 * before each test, closed after the class), read the way the tracing tests read them: the relay's
 * producer spans, and the span a consumer starts from the context it received. Register it with
 * {@code @RegisterExtension static final ExportedSpans spans = new ExportedSpans();}.
 */
public final class ExportedSpans
    implements BeforeAllCallback, BeforeEachCallback, AfterAllCallback {

  private final InMemorySpanExporter exporter = InMemorySpanExporter.create();
  private @Nullable OpenTelemetrySdk sdk;

  /** Built once the class starts. */
  public ExportedSpans() {}

  @Override
  public void beforeAll(ExtensionContext context) {
    sdk =
        OpenTelemetrySdk.builder()
            .setTracerProvider(
                SdkTracerProvider.builder()
                    .addSpanProcessor(SimpleSpanProcessor.create(exporter))
                    .build())
            .setPropagators(ContextPropagators.create(W3CTraceContextPropagator.getInstance()))
            .build();
  }

  @Override
  public void beforeEach(ExtensionContext context) {
    exporter.reset();
  }

  @Override
  public void afterAll(ExtensionContext context) {
    if (sdk != null) {
      sdk.close();
    }
  }

  /** The SDK the relay under test traces with. */
  public OpenTelemetrySdk openTelemetry() {
    return Objects.requireNonNull(sdk, "used before the test class started");
  }

  /** A tracer of the SDK, for the spans a test plays the host's part with (requests, consumers). */
  public Tracer tracer() {
    return openTelemetry().getTracer("test");
  }

  /** Every span finished so far in this test, in the order they finished. */
  public List<SpanData> finished() {
    return exporter.getFinishedSpanItems();
  }

  /** The producer spans, in the order they finished. */
  public List<SpanData> producers() {
    return exporter.getFinishedSpanItems().stream()
        .filter(s -> s.getKind() == SpanKind.PRODUCER)
        .toList();
  }

  /** The one producer span, checked to carry a message id and the {@code send} operation. */
  public SpanData onlyProducer() {
    List<SpanData> producers = producers();
    assertThat(producers).hasSize(1);
    SpanData producer = producers.get(0);
    assertThat(attr(producer, "messaging.message.id")).isNotBlank();
    assertThat(attr(producer, "messaging.operation.type")).isEqualTo("send");
    return producer;
  }

  /**
   * Starts and ends a consumer span with {@code tracer}, parented on the context a consumer {@code
   * received}, and returns it as exported.
   */
  public SpanData consumerSpan(Tracer tracer, Context received) {
    Span consumer =
        tracer
            .spanBuilder("process order.created")
            .setSpanKind(SpanKind.CONSUMER)
            .setParent(received)
            .startSpan();
    consumer.end();
    return exporter.getFinishedSpanItems().stream()
        .filter(s -> s.getSpanId().equals(consumer.getSpanContext().getSpanId()))
        .findFirst()
        .orElseThrow();
  }

  /** The span's string attribute {@code key}, or null. */
  public static String attr(SpanData span, String key) {
    return span.getAttributes().get(AttributeKey.stringKey(key));
  }
}

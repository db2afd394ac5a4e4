package dev.pgoutbox.relay.testing;

import static org.assertj.core.api.Assertions.assertThat;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.util.List;

/**
 * The spans an in-memory OpenTelemetry exporter holds, read the way the tracing tests read them:
 * the relay's producer spans, and the span a consumer starts from the context it received.
 */
public final class ExportedSpans {

  private final InMemorySpanExporter exporter;

  /** Reads what {@code exporter} holds. */
  public ExportedSpans(InMemorySpanExporter exporter) {
    this.exporter = exporter;
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

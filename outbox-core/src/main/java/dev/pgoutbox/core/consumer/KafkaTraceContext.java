package dev.pgoutbox.core.consumer;

import static java.util.Objects.requireNonNull;

import io.opentelemetry.context.Context;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

/**
 * Reads the producer's trace context back from a record {@code
 * dev.pgoutbox.relay.kafka.KafkaPublisher} sent: the W3C {@code traceparent}, {@code tracestate}
 * and {@code baggage} headers, as an OpenTelemetry {@link Context} to parent the consumer's span
 * on, so the handler runs in the trace that began with the request that wrote the event. Needs
 * {@code kafka-clients} and {@code opentelemetry-api} (optional dependencies of this module).
 *
 * <pre>{@code
 * Span span = tracer.spanBuilder("process orders")
 *     .setSpanKind(SpanKind.CONSUMER)
 *     .setParent(KafkaTraceContext.extract(record))
 *     .startSpan();
 * try (Scope scope = span.makeCurrent()) {
 *   inbox.handleOnce(tx, "billing", KafkaEventIds.eventId(record), () -> bill(record));
 * } finally {
 *   span.end();
 * }
 * }</pre>
 */
public final class KafkaTraceContext {

  private KafkaTraceContext() {}

  /**
   * The context carried by {@code record}: {@link Context#root()} with the producer's span (and
   * baggage); the root context itself when the record carries none.
   */
  public static Context extract(ConsumerRecord<?, ?> record) {
    requireNonNull(record, "record");
    return extract(record.headers());
  }

  /** The context carried by {@code headers} (the last header of each name), as above. */
  public static Context extract(Headers headers) {
    requireNonNull(headers, "headers");
    return TraceContexts.extract(
        Context.root(),
        name -> {
          Header header = headers.lastHeader(name);
          return header == null || header.value() == null
              ? null
              : new String(header.value(), StandardCharsets.UTF_8);
        });
  }
}

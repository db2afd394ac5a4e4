package dev.pgoutbox.core.consumer;

import static java.util.Objects.requireNonNull;

import io.nats.client.Message;
import io.nats.client.impl.Headers;
import io.opentelemetry.context.Context;

/**
 * Reads the producer's trace context back from a message {@code
 * dev.pgoutbox.relay.nats.NatsPublisher} sent: the W3C {@code traceparent}, {@code tracestate} and
 * {@code baggage} headers, as an OpenTelemetry {@link Context} to parent the consumer's span on.
 * Needs {@code jnats} and {@code opentelemetry-api} (optional dependencies of this module).
 *
 * <pre>{@code
 * Span span = tracer.spanBuilder("process outbox.order.>")
 *     .setSpanKind(SpanKind.CONSUMER)
 *     .setParent(NatsTraceContext.extract(msg))
 *     .startSpan();
 * }</pre>
 */
public final class NatsTraceContext {

  private NatsTraceContext() {}

  /** The context carried by {@code message}; the root context when it carries none. */
  public static Context extract(Message message) {
    requireNonNull(message, "message");
    Headers headers = message.getHeaders();
    if (headers == null) {
      return Context.root();
    }
    return TraceContexts.extract(Context.root(), headers::getFirst);
  }
}

package dev.pgoutbox.core.consumer;

import static java.util.Objects.requireNonNull;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Delivery;
import io.opentelemetry.context.Context;
import java.util.Map;

/**
 * Reads the producer's trace context back from a message {@code
 * dev.pgoutbox.relay.rabbitmq.RabbitMqPublisher} sent: the W3C {@code traceparent}, {@code
 * tracestate} and {@code baggage} message headers, as an OpenTelemetry {@link Context} to parent
 * the consumer's span on. Needs {@code amqp-client} and {@code opentelemetry-api} (optional
 * dependencies of this module).
 *
 * <pre>{@code
 * Span span = tracer.spanBuilder("process billing")
 *     .setSpanKind(SpanKind.CONSUMER)
 *     .setParent(RabbitMqTraceContext.extract(delivery))
 *     .startSpan();
 * }</pre>
 */
public final class RabbitMqTraceContext {

  private RabbitMqTraceContext() {}

  /** The context carried by {@code delivery}; the root context when it carries none. */
  public static Context extract(Delivery delivery) {
    requireNonNull(delivery, "delivery");
    return extract(delivery.getProperties());
  }

  /** The context carried by a message's properties; the root context when they carry none. */
  public static Context extract(AMQP.BasicProperties properties) {
    requireNonNull(properties, "properties");
    Map<String, Object> headers = properties.getHeaders();
    if (headers == null) {
      return Context.root();
    }
    return TraceContexts.extract(
        Context.root(),
        name -> {
          Object value = headers.get(name); // A LongString on the consumer's side.
          return value == null ? null : value.toString();
        });
  }
}

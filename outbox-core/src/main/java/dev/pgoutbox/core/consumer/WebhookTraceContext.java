package dev.pgoutbox.core.consumer;

import static java.util.Objects.requireNonNull;

import io.opentelemetry.context.Context;
import java.util.List;
import java.util.Map;

/**
 * Reads the producer's trace context back from a request {@code
 * dev.pgoutbox.relay.webhook.WebhookPublisher} sent: the W3C {@code traceparent}, {@code
 * tracestate} and {@code baggage} HTTP headers, as an OpenTelemetry {@link Context} to parent the
 * receiver's span on. Needs {@code opentelemetry-api} (an optional dependency of this module); a
 * receiver whose HTTP server is already instrumented gets the same context from its server span.
 *
 * <pre>{@code
 * Span span = tracer.spanBuilder("process order webhook")
 *     .setSpanKind(SpanKind.CONSUMER)
 *     .setParent(WebhookTraceContext.extract(exchange.getRequestHeaders())) // com.sun.net.httpserver
 *     .startSpan();
 * }</pre>
 */
public final class WebhookTraceContext {

  private WebhookTraceContext() {}

  /**
   * The context carried by {@code headers}, looked up without regard to case; the root context when
   * they carry none.
   */
  public static Context extract(Map<String, ? extends List<String>> headers) {
    requireNonNull(headers, "headers");
    return TraceContexts.extract(Context.root(), name -> HttpHeaderLookup.first(headers, name));
  }
}

package dev.pgoutbox.core.consumer;

import io.opentelemetry.api.baggage.propagation.W3CBaggagePropagator;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.context.propagation.TextMapPropagator;
import java.util.List;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/** The W3C extraction the per-broker {@code *TraceContext} helpers share. */
final class TraceContexts {

  /** The headers read: {@code traceparent}, {@code tracestate}, {@code baggage}. */
  static final List<String> HEADERS = List.of("traceparent", "tracestate", "baggage");

  private static final TextMapPropagator W3C =
      TextMapPropagator.composite(
          W3CTraceContextPropagator.getInstance(), W3CBaggagePropagator.getInstance());

  private static final TextMapGetter<Function<String, @Nullable String>> GETTER =
      new TextMapGetter<>() {
        @Override
        public @Nullable String get(
            @Nullable Function<String, @Nullable String> carrier, String key) {
          return carrier == null ? null : carrier.apply(key);
        }
      };

  private TraceContexts() {}

  /** {@code parent} with the remote span and baggage that {@code header} yields, if any. */
  static Context extract(Context parent, Function<String, @Nullable String> header) {
    return W3C.extract(parent, header, GETTER);
  }
}

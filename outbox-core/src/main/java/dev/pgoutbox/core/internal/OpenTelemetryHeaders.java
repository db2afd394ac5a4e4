package dev.pgoutbox.core.internal;

import io.opentelemetry.api.baggage.Baggage;
import io.opentelemetry.api.baggage.propagation.W3CBaggagePropagator;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapSetter;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/** Reads the current OpenTelemetry context; loaded only when the API is on the class path. */
final class OpenTelemetryHeaders {

  private static final TextMapSetter<Map<String, String>> SETTER =
      (carrier, key, value) -> {
        if (carrier != null) {
          carrier.put(key, value);
        }
      };

  private OpenTelemetryHeaders() {}

  static Map<String, String> current(boolean withBaggage) {
    Context context = Context.current();
    boolean traced = Span.fromContext(context).getSpanContext().isValid();
    @Nullable Baggage baggage = withBaggage ? Baggage.fromContextOrNull(context) : null;
    boolean hasBaggage = baggage != null && !baggage.isEmpty();
    if (!traced && !hasBaggage) {
      return Map.of(); // The common case outside a request: nothing to allocate.
    }
    Map<String, String> headers = new LinkedHashMap<>(4);
    if (traced) {
      W3CTraceContextPropagator.getInstance().inject(context, headers, SETTER);
    }
    if (hasBaggage) {
      W3CBaggagePropagator.getInstance().inject(context, headers, SETTER);
    }
    return headers;
  }
}

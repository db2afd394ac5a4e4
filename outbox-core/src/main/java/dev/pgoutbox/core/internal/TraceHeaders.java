package dev.pgoutbox.core.internal;

import java.util.Map;

/**
 * The W3C trace context headers of the caller's current OpenTelemetry context, when OpenTelemetry's
 * API is on the class path. This class names no OpenTelemetry type, so it loads without it; {@link
 * OpenTelemetryHeaders}, which does, is touched only when the API is there.
 */
public final class TraceHeaders {

  /** The W3C Trace Context header with the trace and parent span ids: {@value}. */
  public static final String TRACEPARENT = "traceparent";

  /** The W3C Trace Context header with vendor-specific trace state: {@value}. */
  public static final String TRACESTATE = "tracestate";

  /** The W3C Baggage header: {@value}. */
  public static final String BAGGAGE = "baggage";

  private static final boolean AVAILABLE = loadable("io.opentelemetry.api.trace.Span");

  private TraceHeaders() {}

  /** Whether OpenTelemetry's API is on the class path. */
  public static boolean available() {
    return AVAILABLE;
  }

  /**
   * {@code traceparent} (and {@code tracestate} when not empty, and {@code baggage} when asked and
   * not empty) of the current context; empty without OpenTelemetry or without a valid current span.
   */
  public static Map<String, String> current(boolean baggage) {
    return AVAILABLE ? OpenTelemetryHeaders.current(baggage) : Map.of();
  }

  private static boolean loadable(String className) {
    try {
      Class.forName(className, false, TraceHeaders.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }
}

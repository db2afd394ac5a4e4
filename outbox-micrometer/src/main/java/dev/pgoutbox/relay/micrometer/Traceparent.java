package dev.pgoutbox.relay.micrometer;

import org.jspecify.annotations.Nullable;

/** The parts of a W3C {@code traceparent} header ({@code 00-<trace id>-<span id>-<flags>}). */
record Traceparent(String traceId, String spanId, boolean sampled) {

  private static final String INVALID_TRACE_ID = "0".repeat(32);
  private static final String INVALID_SPAN_ID = "0".repeat(16);

  /**
   * The parts of {@code value}, or null when it is not a valid traceparent: the W3C layout, lower
   * case hex, non-zero ids, version {@code ff} refused, later versions read by their first 55
   * characters as the recommendation says.
   */
  static @Nullable Traceparent parse(@Nullable String value) {
    if (value == null || value.length() < 55) {
      return null;
    }
    if (value.charAt(2) != '-' || value.charAt(35) != '-' || value.charAt(52) != '-') {
      return null;
    }
    String version = value.substring(0, 2);
    if (!isHex(version) || version.equals("ff") || (version.equals("00") && value.length() != 55)) {
      return null;
    }
    if (value.length() > 55 && value.charAt(55) != '-') {
      return null;
    }
    String traceId = value.substring(3, 35);
    String spanId = value.substring(36, 52);
    String flags = value.substring(53, 55);
    if (!isHex(traceId) || !isHex(spanId) || !isHex(flags)) {
      return null;
    }
    if (traceId.equals(INVALID_TRACE_ID) || spanId.equals(INVALID_SPAN_ID)) {
      return null;
    }
    return new Traceparent(traceId, spanId, (Integer.parseInt(flags, 16) & 1) == 1);
  }

  /** The trace id of {@code value}, or null when it is not a valid traceparent. */
  static @Nullable String traceIdOf(@Nullable String value) {
    Traceparent parsed = parse(value);
    return parsed == null ? null : parsed.traceId();
  }

  private static boolean isHex(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
        return false;
      }
    }
    return true;
  }
}

package dev.pgoutbox.core.consumer;

import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/** Case-insensitive lookup in an HTTP server's header map; names no optional dependency. */
final class HttpHeaderLookup {

  private HttpHeaderLookup() {}

  /** The first value of header {@code name}, matched without regard to case, or null. */
  static @Nullable String first(Map<String, ? extends List<String>> headers, String name) {
    List<String> values = headers.get(name);
    if (values == null) {
      for (Map.Entry<String, ? extends List<String>> e : headers.entrySet()) {
        if (e.getKey() != null && e.getKey().equalsIgnoreCase(name)) {
          values = e.getValue();
          break;
        }
      }
    }
    return values == null || values.isEmpty() ? null : values.get(0);
  }
}

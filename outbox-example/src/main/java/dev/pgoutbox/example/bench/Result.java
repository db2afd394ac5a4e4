package dev.pgoutbox.example.bench;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintStream;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/** One line of results: ordered fields, printed as a table row or as one JSON object. */
final class Result {

  private static final ObjectMapper JSON = new ObjectMapper();

  private final Map<String, Object> fields = new LinkedHashMap<>();

  Result(String scenario) {
    fields.put("scenario", scenario);
  }

  Result put(String key, Object value) {
    fields.put(key, value);
    return this;
  }

  Object get(String key) {
    return fields.get(key);
  }

  long longValue(String key) {
    Object value = fields.get(key);
    return value instanceof Number n ? n.longValue() : 0;
  }

  /**
   * Whether the verification fields are clean: nothing lost (including a {@code baseline_lost} or
   * {@code limit_remaining}), nothing reordered, nothing left pending.
   */
  boolean verified() {
    return longValue("lost") == 0
        && longValue("reordered") == 0
        && longValue("remaining") == 0
        && longValue("baseline_lost") == 0
        && longValue("limit_remaining") == 0;
  }

  void print(PrintStream out, boolean json) {
    if (json) {
      try {
        out.println(JSON.writeValueAsString(fields));
      } catch (JsonProcessingException e) {
        throw new IllegalStateException(e);
      }
      return;
    }
    StringBuilder line = new StringBuilder();
    for (Map.Entry<String, Object> field : fields.entrySet()) {
      line.append(field.getKey()).append('=').append(format(field.getValue())).append("  ");
    }
    out.println(line.toString().trim());
  }

  static double round(double value, int digits) {
    double scale = Math.pow(10, digits);
    return Math.round(value * scale) / scale;
  }

  private static String format(Object value) {
    if (value instanceof Double d) {
      return String.format(Locale.ROOT, d >= 100 ? "%.0f" : "%.3f", d);
    }
    return String.valueOf(value);
  }
}

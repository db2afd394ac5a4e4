package dev.pgoutbox.tools.bench;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
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
   * Whether the verification fields are clean: nothing lost (including a {@code baseline_lost},
   * {@code wal_lost} or {@code limit_remaining}), nothing reordered (by the relays, the WAL relay
   * included), nothing left pending.
   */
  boolean verified() {
    return longValue("lost") == 0
        && longValue("reordered") == 0
        && longValue("remaining") == 0
        && longValue("baseline_lost") == 0
        && longValue("wal_lost") == 0
        && longValue("wal_reordered") == 0
        && longValue("wal_remaining") == 0
        && longValue("limit_remaining") == 0;
  }

  /**
   * One line for several rounds of the same scenario: each rate ({@code *events_per_s}) and ratio
   * ({@code ratio_to_*}) as the median of the rounds, with {@code _min} and {@code _max}; counts of
   * what went wrong ({@code lost}, {@code reordered}, {@code duplicates}, {@code remaining}, also
   * prefixed) summed; everything else (settings, where it ran) from the first round.
   */
  static Result summarize(String scenario, List<Result> rounds) {
    Result summary = new Result(scenario).put("rounds", rounds.size());
    for (String key : rounds.get(0).fields.keySet()) {
      if (key.equals("scenario") || key.equals("round")) {
        continue;
      }
      List<Double> values = new ArrayList<>();
      for (Result round : rounds) {
        if (round.fields.get(key) instanceof Number n) {
          values.add(n.doubleValue());
        }
      }
      if (key.endsWith("events_per_s") || key.startsWith("ratio_")) {
        Collections.sort(values);
        int n = values.size();
        double median =
            n % 2 == 1 ? values.get(n / 2) : (values.get(n / 2 - 1) + values.get(n / 2)) / 2;
        int digits = key.startsWith("ratio_") ? 3 : 0;
        summary
            .put(key, round(median, digits))
            .put(key + "_min", values.get(0))
            .put(key + "_max", values.get(n - 1));
      } else if (key.endsWith("lost")
          || key.endsWith("reordered")
          || key.endsWith("duplicates")
          || key.endsWith("remaining")) {
        long sum = 0;
        for (double value : values) {
          sum += (long) value;
        }
        summary.put(key, sum);
      } else if (!key.equals("seconds")) {
        summary.put(key, rounds.get(0).fields.get(key));
      }
    }
    return summary;
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

package dev.pgoutbox.relay;

import static java.util.Objects.requireNonNull;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/** Span attributes a publisher hands the tracing: names to String, Long or Boolean values. */
final class TraceAttributes {

  private TraceAttributes() {}

  /**
   * An unmodifiable copy of {@code attributes}, Integers widened to Long.
   *
   * @throws IllegalArgumentException for a value that is not a String, Integer, Long or Boolean
   */
  static Map<String, Object> copy(Map<String, ?> attributes, String field) {
    requireNonNull(attributes, field);
    boolean widen = false;
    for (Map.Entry<String, ?> a : attributes.entrySet()) {
      String name = requireNonNull(a.getKey(), field + " name");
      Object value = requireNonNull(a.getValue(), field + " value of " + name);
      if (value instanceof Integer) {
        widen = true;
      } else if (!(value instanceof String || value instanceof Long || value instanceof Boolean)) {
        throw new IllegalArgumentException(
            field
                + " value of "
                + name
                + " must be a String, Long or Boolean, was "
                + value.getClass().getName());
      }
    }
    if (!widen) {
      @SuppressWarnings("unchecked") // Every value was checked to be an Object of a listed type.
      Map<String, Object> checked = (Map<String, Object>) Map.copyOf(attributes);
      return checked;
    }
    Map<String, Object> copy = new LinkedHashMap<>(attributes.size() * 2);
    attributes.forEach(
        (name, value) ->
            copy.put(name, value instanceof Integer i ? (Object) i.longValue() : value));
    return Collections.unmodifiableMap(copy);
  }
}

package dev.pgoutbox.core;

import dev.pgoutbox.core.internal.Json;

/**
 * JSON text to store as an event's payload as it is, without going through the {@code
 * ObjectMapper}: for payloads the host has already serialized.
 *
 * <pre>{@code
 * OutboxEvent.of("order", "42", "order.created", RawJson.of("{\"total\": 12.50}"));
 * }</pre>
 *
 * <p>The text is checked when the {@code RawJson} is made: it must be exactly one strict JSON value
 * (no comments, no trailing commas, no {@code NaN}) that PostgreSQL's {@code jsonb} stores
 * unchanged (no {@code \u0000} escape or unpaired surrogate in any key or string, every number
 * within {@code numeric}'s range). {@code jsonb} keeps the value, not the text: whitespace, key
 * order and duplicate keys are normalized by PostgreSQL.
 *
 * <p>Immutable and thread-safe.
 *
 * @param json one JSON value, e.g. {@code {"total": 12.50}}
 */
public record RawJson(String json) {

  /**
   * Checks the text.
   *
   * @throws InvalidEventException naming what makes the text unfit for {@code jsonb}
   */
  public RawJson {
    if (json == null) {
      throw new InvalidEventException("payload JSON text must not be null");
    }
    try {
      Json.check(json, "payload");
    } catch (IllegalArgumentException e) {
      throw new InvalidEventException(e.getMessage(), e);
    }
  }

  /**
   * JSON text to store as it is.
   *
   * @throws InvalidEventException naming what makes the text unfit for {@code jsonb}
   */
  public static RawJson of(String json) {
    return new RawJson(json);
  }

  @Override
  public String toString() {
    return json;
  }
}

package dev.pgoutbox.core;

import dev.pgoutbox.core.internal.HeaderNames;
import dev.pgoutbox.core.internal.Texts;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * One event to append to the outbox in the host's transaction.
 *
 * <pre>{@code
 * outbox.append(tx, OutboxEvent.of("order", order.id(), "order.created", order));
 *
 * outbox.append(tx, OutboxEvent.builder()
 *     .aggregate("order", order.id())
 *     .eventType("order.shipped")
 *     .payload(new OrderShipped(order.id(), carrier))
 *     .header("correlation-id", correlationId)
 *     .build());
 * }</pre>
 *
 * <p>The components are checked here, so a bad event fails where it is made: {@code aggregateType},
 * {@code aggregateId} and {@code eventType} must be present, not blank, at most {@value
 * #MAX_NAME_LENGTH} characters (counted in code points, as PostgreSQL counts them), and free of
 * {@code U+0000} and unpaired surrogates; header values must not be null and are held to the same
 * character rules (any other text is fine: each publisher encodes what its protocol cannot carry).
 * Header keys must be names every broker carries as they are: RFC 9110 tokens (letters, digits and
 * {@code !#$%&'+-.^_`|~}) of at most 100 characters, and not a name a publisher writes itself
 * ({@code event_id}, {@code event_type}, {@code aggregate_type}, {@code aggregate_id}, {@code
 * Nats-Msg-Id}, {@code content-type}, {@code ce_*} and {@code ce-*}, the webhook's {@code
 * X-Pgoutbox-*}, {@code webhook-*}, {@code Idempotency-Key}, and the HTTP headers a client sets
 * itself such as {@code Host} and {@code Content-Length}; any case). The payload's JSON is made and
 * checked by {@link Outbox#append}, before any statement is sent.
 *
 * <p><b>Payload.</b> Any object Jackson serializes (a record, a POJO, a {@code Map}, a {@code
 * JsonNode}), or {@link RawJson} for JSON text the host has already written, stored as it is. A
 * bare {@code String} (or other {@code CharSequence}) or {@code byte[]} is refused, because it is
 * ambiguous: pre-serialized JSON passed as a {@code String} would otherwise be stored quietly as
 * one JSON string. Use {@code RawJson.of(text)} for JSON text and {@code TextNode.valueOf(text)}
 * for a JSON string. A JSON {@code null} payload is {@code NullNode.getInstance()}.
 *
 * <p>Immutable and thread-safe when the payload is.
 *
 * @param id the event id, or null to let {@link Outbox} make a time-ordered UUIDv7 when appending
 * @param aggregateType the kind of aggregate, e.g. {@code order}
 * @param aggregateId the aggregate's id; events of one aggregate are published in order
 * @param eventType what happened, e.g. {@code order.created}
 * @param payload the event's body, serialized to JSON when appended
 * @param headers headers forwarded to the broker, on top of those of {@link
 *     Outbox.Builder#headers(java.util.function.Supplier)}
 */
public record OutboxEvent(
    @Nullable UUID id,
    String aggregateType,
    String aggregateId,
    String eventType,
    Object payload,
    Map<String, String> headers) {

  /** Longest {@code aggregateType}, {@code aggregateId} or {@code eventType}: the column's size. */
  public static final int MAX_NAME_LENGTH = 100;

  /**
   * Checks every component and copies the headers.
   *
   * @throws InvalidEventException naming the first component that breaks a rule, and the rule
   */
  public OutboxEvent {
    requireName("aggregateType", aggregateType);
    requireName("aggregateId", aggregateId);
    requireName("eventType", eventType);
    requirePayload(payload);
    headers = checkedHeaders(headers, "headers");
  }

  /**
   * An event without explicit id or headers.
   *
   * @throws InvalidEventException naming the first argument that breaks a rule, and the rule
   */
  public static OutboxEvent of(
      String aggregateType, String aggregateId, String eventType, Object payload) {
    return new OutboxEvent(null, aggregateType, aggregateId, eventType, payload, Map.of());
  }

  /** A builder of an event; not thread-safe. */
  public static Builder builder() {
    return new Builder();
  }

  /** This event with {@code id} as its id. */
  public OutboxEvent withId(UUID id) {
    return new OutboxEvent(id, aggregateType, aggregateId, eventType, payload, headers);
  }

  /** This event with one more header (or another value for an existing one). */
  public OutboxEvent withHeader(String key, String value) {
    Map<String, String> more = new LinkedHashMap<>(headers);
    more.put(key, value);
    return new OutboxEvent(id, aggregateType, aggregateId, eventType, payload, more);
  }

  private static void requireName(String field, @Nullable String value) {
    String problem = Texts.requiredProblem(field, value, MAX_NAME_LENGTH);
    if (problem != null) {
      throw new InvalidEventException(problem);
    }
  }

  private static void requirePayload(@Nullable Object payload) {
    if (payload == null) {
      throw new InvalidEventException(
          "payload must not be null (use NullNode.getInstance() for a JSON null)");
    }
    if (payload instanceof CharSequence) {
      throw new InvalidEventException(
          "payload must not be a "
              + payload.getClass().getSimpleName()
              + ", which is ambiguous: wrap JSON text in RawJson.of(text) to store it as it is, or"
              + " pass TextNode.valueOf(text) to store a JSON string");
    }
    if (payload instanceof byte[]) {
      throw new InvalidEventException(
          "payload must not be a byte[], which Jackson would store as a base64 string: pass"
              + " RawJson.of(new String(bytes, UTF_8)) for JSON bytes, or an object to serialize");
    }
  }

  /**
   * Checks headers (no null map, key or value; keys and values storable) and returns an
   * unmodifiable copy that keeps their order.
   */
  static Map<String, String> checkedHeaders(@Nullable Map<String, String> headers, String field) {
    if (headers == null) {
      throw new InvalidEventException(field + " must not be null (use Map.of() for none)");
    }
    if (headers.isEmpty()) {
      return Map.of();
    }
    Map<String, String> copy = new LinkedHashMap<>();
    for (Map.Entry<String, String> header : headers.entrySet()) {
      @Nullable String key = header.getKey();
      @Nullable String value = header.getValue();
      if (key == null) {
        throw new InvalidEventException(field + " must not contain a null key");
      }
      String keyProblem = HeaderNames.problem(field + " key '" + Texts.printable(key) + "'", key);
      if (keyProblem != null) {
        throw new InvalidEventException(keyProblem);
      }
      if (value == null) {
        throw new InvalidEventException(
            field + " value of '" + Texts.printable(key) + "' must not be null");
      }
      String valueProblem =
          Texts.unstorableProblem(field + " value of '" + Texts.printable(key) + "'", value);
      if (valueProblem != null) {
        throw new InvalidEventException(valueProblem);
      }
      copy.put(key, value);
    }
    return Collections.unmodifiableMap(copy);
  }

  /** Builds an {@link OutboxEvent}; every rule is checked by {@link #build()}. Not thread-safe. */
  public static final class Builder {
    private @Nullable UUID id;
    private @Nullable String aggregateType;
    private @Nullable String aggregateId;
    private @Nullable String eventType;
    private @Nullable Object payload;
    private final Map<String, String> headers = new LinkedHashMap<>();

    private Builder() {}

    /** An explicit event id; without one, the outbox makes a UUIDv7 when appending. */
    public Builder id(@Nullable UUID id) {
      this.id = id;
      return this;
    }

    /** The aggregate's type and id, e.g. {@code ("order", "42")}. */
    public Builder aggregate(String aggregateType, String aggregateId) {
      this.aggregateType = aggregateType;
      this.aggregateId = aggregateId;
      return this;
    }

    /** The aggregate's type, e.g. {@code order}. */
    public Builder aggregateType(String aggregateType) {
      this.aggregateType = aggregateType;
      return this;
    }

    /** The aggregate's id. */
    public Builder aggregateId(String aggregateId) {
      this.aggregateId = aggregateId;
      return this;
    }

    /** What happened, e.g. {@code order.created}. */
    public Builder eventType(String eventType) {
      this.eventType = eventType;
      return this;
    }

    /** The event's body: an object for Jackson, or {@link RawJson}. */
    public Builder payload(Object payload) {
      this.payload = payload;
      return this;
    }

    /** Adds one header (a later value for the same key wins). */
    public Builder header(String key, String value) {
      headers.put(key, value);
      return this;
    }

    /** Adds every header of {@code headers} (later values for the same key win). */
    public Builder headers(Map<String, String> headers) {
      this.headers.putAll(headers);
      return this;
    }

    /**
     * The event.
     *
     * @throws InvalidEventException naming the first component that breaks a rule, and the rule
     */
    public OutboxEvent build() {
      return new OutboxEvent(id, aggregateType, aggregateId, eventType, payload, headers);
    }
  }
}

package dev.pgoutbox.relay;

import static java.util.Objects.requireNonNull;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;
import java.util.UUID;

/**
 * One claimed event, as the relay hands it to a {@link Publisher}.
 *
 * @param id the event id; publishers send it as the broker's deduplication key
 * @param position the event's place in the outbox (tie-break within one transaction)
 * @param aggregateType the aggregate's type, e.g. {@code order}
 * @param aggregateId the aggregate's id; publishers use it as the partition or routing key
 * @param eventType the event's type, e.g. {@code order.created}
 * @param payload the payload as JSON text, exactly as stored
 * @param headers stored headers (trace context, correlation ids), forwarded as message headers
 * @param attempt 1 for the first publish of this event, 2 for the first retry, and so on
 * @param createdAt when the event was written (the writer's transaction time)
 */
public record OutboxMessage(
    UUID id,
    long position,
    String aggregateType,
    String aggregateId,
    String eventType,
    String payload,
    Map<String, String> headers,
    int attempt,
    Instant createdAt) {

  /** Checks that every component is present and copies the headers. */
  public OutboxMessage {
    requireNonNull(id, "id");
    requireNonNull(aggregateType, "aggregateType");
    requireNonNull(aggregateId, "aggregateId");
    requireNonNull(eventType, "eventType");
    requireNonNull(payload, "payload");
    headers = Map.copyOf(requireNonNull(headers, "headers"));
    requireNonNull(createdAt, "createdAt");
    if (attempt < 1) {
      throw new IllegalArgumentException("attempt must be at least 1, was " + attempt);
    }
  }

  /** The payload as UTF-8 bytes, the form most broker clients send. */
  public byte[] payloadBytes() {
    return payload.getBytes(StandardCharsets.UTF_8);
  }
}

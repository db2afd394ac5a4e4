package dev.pgoutbox.relay;

import static java.util.Objects.requireNonNull;

import java.time.Instant;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * One event row as the operator surfaces show it ({@link OutboxAdmin#event}, {@link
 * OutboxAdmin#deadLetters(DeadLetterQuery)}, the previews of a retry or discard).
 *
 * <p>The outbox keeps the last failure of an event only ({@code last_error}), with the time it died
 * ({@code deadAt}) or the time it may be tried again ({@code retryAfter}); earlier failures are in
 * the relay's log, one line each with {@code event_id} and {@code attempt}.
 *
 * @param id event id
 * @param position place in the outbox (write order); a listing's cursor
 * @param aggregateType the aggregate's type
 * @param aggregateId the aggregate's id
 * @param eventType the event's type
 * @param headers the headers as JSON text
 * @param payload the payload as JSON text; null unless it was asked for (payloads are hidden by
 *     default: they may hold personal data)
 * @param attempts failed attempts since the last reset
 * @param lastError the last failure's reason; null if it never failed
 * @param createdAt when the event was written
 * @param retryAfter when it may be tried again after a failure; null if not backing off
 * @param deadAt when it was dead-lettered; null if not dead
 * @param processedAt when it was published; null while unpublished
 * @param parked whether a WAL relay's reader left it to the table drainer
 */
public record StoredEvent(
    UUID id,
    long position,
    String aggregateType,
    String aggregateId,
    String eventType,
    String headers,
    @Nullable String payload,
    int attempts,
    @Nullable String lastError,
    Instant createdAt,
    @Nullable Instant retryAfter,
    @Nullable Instant deadAt,
    @Nullable Instant processedAt,
    boolean parked) {

  /** Checks the values. */
  public StoredEvent {
    requireNonNull(id, "id must not be null");
    requireNonNull(aggregateType, "aggregateType must not be null");
    requireNonNull(aggregateId, "aggregateId must not be null");
    requireNonNull(eventType, "eventType must not be null");
    requireNonNull(headers, "headers must not be null");
    requireNonNull(createdAt, "createdAt must not be null");
  }

  /**
   * Where the event stands: {@code published}, {@code dead}, {@code backing off} or {@code
   * pending}.
   */
  public String state() {
    if (processedAt != null) {
      return "published";
    }
    if (deadAt != null) {
      return "dead";
    }
    if (retryAfter != null) {
      return "backing off";
    }
    return "pending";
  }

  /** This event without its payload. */
  public StoredEvent withoutPayload() {
    return payload == null
        ? this
        : new StoredEvent(
            id,
            position,
            aggregateType,
            aggregateId,
            eventType,
            headers,
            null,
            attempts,
            lastError,
            createdAt,
            retryAfter,
            deadAt,
            processedAt,
            parked);
  }
}

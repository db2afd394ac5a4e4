package dev.pgoutbox.admin;

import static java.util.Objects.requireNonNull;

import java.time.Instant;
import java.util.List;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * One event row as the operator surfaces show it ({@link OutboxAdmin#event}, {@link
 * OutboxAdmin#deadLetters(DeadLetterQuery)}, the previews of a retry or discard).
 *
 * <p>The outbox keeps the newest failure's reason in {@code last_error}, with the time it died
 * ({@code deadAt}) or the time it may be tried again ({@code retryAfter}), and the last ten failed
 * attempts with their times in {@code error_history} ({@link #failures()}); older ones are in the
 * relay's log, one line each with {@code event_id} and {@code attempt}.
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
 * @param failures its last failed attempts, oldest first (at most ten); empty if it never failed,
 *     and in dead-letter listings (read one event with {@link OutboxAdmin#event} for them)
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
    boolean parked,
    List<FailedAttempt> failures) {

  /**
   * One failed attempt to publish an event, as the relay recorded it.
   *
   * @param attempt the attempt's number, counted since the last reset by an operator's retry
   * @param at when the relay recorded it (database time)
   * @param error the reason, as stored in {@code last_error} at the time
   * @param dead whether this attempt dead-lettered the event
   */
  public record FailedAttempt(int attempt, Instant at, String error, boolean dead) {

    /** Checks the values. */
    public FailedAttempt {
      requireNonNull(at, "at must not be null");
      requireNonNull(error, "error must not be null");
    }
  }

  /** Checks the values. */
  public StoredEvent {
    failures = List.copyOf(failures);
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
            parked,
            failures);
  }
}

package dev.pgoutbox.admin;

import java.time.Instant;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * A dead event, as {@link OutboxAdmin#deadLetters} lists it.
 *
 * @param id event id
 * @param position place in the outbox; pass the last one seen to page on
 * @param aggregateType the aggregate's type
 * @param aggregateId the aggregate's id
 * @param eventType the event's type
 * @param payload the payload as JSON text
 * @param attempts failed attempts
 * @param lastError the last failure's reason
 * @param createdAt when the event was written
 * @param deadAt when it was dead-lettered
 */
public record DeadLetter(
    UUID id,
    long position,
    String aggregateType,
    String aggregateId,
    String eventType,
    String payload,
    int attempts,
    @Nullable String lastError,
    Instant createdAt,
    Instant deadAt) {}

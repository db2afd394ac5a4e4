package dev.pgoutbox.relay.internal;

import java.time.OffsetDateTime;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/** One claimed row, as read from {@code outbox_events}. */
public record ClaimedRow(
    UUID id,
    long position,
    String aggregateType,
    String aggregateId,
    String eventType,
    String payload,
    @Nullable String headers,
    int attempts,
    OffsetDateTime createdAt,
    boolean due) {

  /** This row with {@code payload} and {@code headers}, read after the claim. */
  public ClaimedRow withBody(String payload, @Nullable String headers) {
    return new ClaimedRow(
        id,
        position,
        aggregateType,
        aggregateId,
        eventType,
        payload,
        headers,
        attempts,
        createdAt,
        due);
  }

  /** Whether {@code other} belongs to the same aggregate. */
  public boolean sameAggregate(ClaimedRow other) {
    return aggregateId.equals(other.aggregateId) && aggregateType.equals(other.aggregateType);
  }

  /** The aggregate's key, for maps. */
  public AggregateKey aggregate() {
    return new AggregateKey(aggregateType, aggregateId);
  }

  /** An aggregate: type and id. */
  public record AggregateKey(String type, String id) {}
}

package dev.pgoutbox.admin;

import static java.util.Objects.requireNonNull;

import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * Which events an operator means: one by id, every event of one aggregate, or every event of one
 * type. {@link OutboxAdmin#retryable} and {@link OutboxAdmin#discardable} narrow it to the events a
 * retry or a discard would touch.
 *
 * <pre>{@code
 * admin.retryable(EventSelector.aggregate("order", "42"), 100);
 * }</pre>
 *
 * @param id the event's id, for {@link #id(UUID)}; else null
 * @param aggregateType the aggregate's type, for {@link #aggregate}; else null
 * @param aggregateId the aggregate's id, for {@link #aggregate}; else null
 * @param eventType the event type, for {@link #eventType(String)}; else null
 */
public record EventSelector(
    @Nullable UUID id,
    @Nullable String aggregateType,
    @Nullable String aggregateId,
    @Nullable String eventType) {

  /**
   * Checks that exactly one of the three ways is given.
   *
   * @throws IllegalArgumentException otherwise
   */
  public EventSelector {
    int ways =
        (id != null ? 1 : 0)
            + (aggregateType != null || aggregateId != null ? 1 : 0)
            + (eventType != null ? 1 : 0);
    if (ways != 1) {
      throw new IllegalArgumentException(
          "an EventSelector names exactly one of id, aggregate or eventType, was " + ways);
    }
    if ((aggregateType == null) != (aggregateId == null)) {
      throw new IllegalArgumentException(
          "an aggregate selector needs both aggregateType and aggregateId");
    }
  }

  /** The event with this id. */
  public static EventSelector id(UUID id) {
    return new EventSelector(requireNonNull(id, "id must not be null"), null, null, null);
  }

  /** The events of one aggregate. */
  public static EventSelector aggregate(String aggregateType, String aggregateId) {
    return new EventSelector(
        null,
        requireNonNull(aggregateType, "aggregateType must not be null"),
        requireNonNull(aggregateId, "aggregateId must not be null"),
        null);
  }

  /** The events of one event type. */
  public static EventSelector eventType(String eventType) {
    return new EventSelector(
        null, null, null, requireNonNull(eventType, "eventType must not be null"));
  }

  @Override
  public String toString() {
    if (id != null) {
      return "event " + id;
    }
    if (eventType != null) {
      return "event type " + eventType;
    }
    return "aggregate " + aggregateType + "/" + aggregateId;
  }
}

package dev.pgoutbox.admin;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static java.util.Objects.requireNonNull;

import org.jooq.Condition;

/** The admin's rules for which events an operator action touches, each stated once. */
final class EventConditions {

  private EventConditions() {}

  /** What a retry resets: an unpublished event that is dead or backing off. */
  static Condition retryable() {
    return OUTBOX_EVENTS.PROCESSED_AT.isNull().and(deadOrBackingOff());
  }

  /** Dead or backing off, whether published or not: the rule all three retries share. */
  static Condition deadOrBackingOff() {
    return OUTBOX_EVENTS.DEAD_AT.isNotNull().or(OUTBOX_EVENTS.RETRY_AFTER.isNotNull());
  }

  /** What a discard deletes: a dead letter (dead, unpublished). */
  static Condition discardable() {
    return OUTBOX_EVENTS.DEAD_AT.isNotNull().and(OUTBOX_EVENTS.PROCESSED_AT.isNull());
  }

  /** The events {@code selector} names: one id, one event type, or one aggregate. */
  static Condition selected(EventSelector selector) {
    requireNonNull(selector, "selector must not be null");
    if (selector.id() != null) {
      return OUTBOX_EVENTS.ID.eq(selector.id());
    }
    if (selector.eventType() != null) {
      return OUTBOX_EVENTS.EVENT_TYPE.eq(selector.eventType());
    }
    return OUTBOX_EVENTS
        .AGGREGATE_TYPE
        .eq(selector.aggregateType())
        .and(OUTBOX_EVENTS.AGGREGATE_ID.eq(selector.aggregateId()));
  }
}

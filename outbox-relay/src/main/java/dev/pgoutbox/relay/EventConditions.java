package dev.pgoutbox.relay;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static java.util.Objects.requireNonNull;
import static org.jooq.impl.DSL.selectOne;

import dev.pgoutbox.db.jooq.tables.OutboxEvents;
import org.jooq.Condition;
import org.jooq.impl.DSL;

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

  /** The head of a blocked aggregate: {@link OutboxAdmin#blockedAggregates} counts these rows. */
  static Condition blockedHead(OutboxEvents e) {
    OutboxEvents p = OUTBOX_EVENTS.as("p");
    return e.PROCESSED_AT
        .isNull()
        .and(e.DEAD_AT.isNotNull().or(e.RETRY_AFTER.gt(DSL.currentOffsetDateTime())))
        .andNotExists(
            selectOne()
                .from(p)
                .where(p.PROCESSED_AT.isNull())
                .and(p.AGGREGATE_TYPE.eq(e.AGGREGATE_TYPE))
                .and(p.AGGREGATE_ID.eq(e.AGGREGATE_ID))
                .and(p.POSITION.lt(e.POSITION)));
  }
}

package dev.pgoutbox.admin;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static java.util.Objects.requireNonNull;

import dev.pgoutbox.core.internal.Retention;
import dev.pgoutbox.relay.internal.Sql;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.Collection;
import java.util.UUID;
import org.jooq.Condition;
import org.jooq.impl.DSL;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The admin's writes: retries, discards and retention, each in a transaction of its own. */
final class EventWrites {

  private static final Logger LOG = LoggerFactory.getLogger(OutboxAdmin.class);

  private final AdminDatabase db;

  EventWrites(AdminDatabase db) {
    this.db = db;
  }

  /** See {@link OutboxAdmin#retry(UUID)}. */
  boolean retry(UUID eventId) {
    requireNonNull(eventId, "eventId must not be null");
    int updated =
        resetWhere(
            OUTBOX_EVENTS.ID.eq(eventId).and(EventConditions.deadOrBackingOff()),
            "retry event " + eventId);
    if (updated > 0) {
      LOG.info("pgoutbox-admin[{}] - Retrying event {}", db.schema, eventId);
    }
    return updated > 0;
  }

  /** See {@link OutboxAdmin#retryAggregate}. */
  int retryAggregate(String aggregateType, String aggregateId) {
    requireNonNull(aggregateType, "aggregateType must not be null");
    requireNonNull(aggregateId, "aggregateId must not be null");
    return resetWhere(
        OUTBOX_EVENTS
            .AGGREGATE_TYPE
            .eq(aggregateType)
            .and(OUTBOX_EVENTS.AGGREGATE_ID.eq(aggregateId))
            .and(EventConditions.deadOrBackingOff()),
        "retry aggregate " + aggregateType + "/" + aggregateId);
  }

  /** See {@link OutboxAdmin#retryEventType}. */
  int retryEventType(String eventType) {
    requireNonNull(eventType, "eventType must not be null");
    return resetWhere(
        OUTBOX_EVENTS.EVENT_TYPE.eq(eventType).and(EventConditions.deadOrBackingOff()),
        "retry event type " + eventType);
  }

  boolean discard(UUID eventId) {
    requireNonNull(eventId, "eventId must not be null");
    int deleted =
        db.write(
            "discard dead letter " + eventId,
            tx ->
                tx.deleteFrom(OUTBOX_EVENTS)
                    .where(OUTBOX_EVENTS.ID.eq(eventId))
                    .and(OUTBOX_EVENTS.DEAD_AT.isNotNull())
                    .and(OUTBOX_EVENTS.PROCESSED_AT.isNull())
                    .execute());
    if (deleted > 0) {
      LOG.info("pgoutbox-admin[{}] - Discarded dead letter {}", db.schema, eventId);
    }
    return deleted > 0;
  }

  long purgeProcessed(Duration olderThan, int batchSize) {
    Retention.requirePurgeArguments(olderThan, batchSize);
    long total = 0;
    while (true) {
      int deleted =
          db.write(
              "purge processed events",
              tx ->
                  tx.deleteFrom(OUTBOX_EVENTS)
                      .where(
                          OUTBOX_EVENTS.ID.in(
                              DSL.select(OUTBOX_EVENTS.ID)
                                  .from(OUTBOX_EVENTS)
                                  .where(
                                      OUTBOX_EVENTS.PROCESSED_AT.lt(
                                          Sql.clockTimestampPlus(olderThan.negated())))
                                  .limit(batchSize)))
                      .execute());
      total += deleted;
      if (deleted < batchSize) {
        return total;
      }
    }
  }

  int retryEvents(Collection<UUID> eventIds) {
    requireNonNull(eventIds, "eventIds must not be null");
    requireSelectionSize(eventIds.size());
    if (eventIds.isEmpty()) {
      return 0;
    }
    int updated =
        resetWhere(
            OUTBOX_EVENTS.ID.in(eventIds).and(EventConditions.deadOrBackingOff()),
            "retry " + eventIds.size() + " events");
    LOG.info(
        "pgoutbox-admin[{}] - Retried {} of {} selected events",
        db.schema,
        updated,
        eventIds.size());
    return updated;
  }

  int discardEvents(Collection<UUID> eventIds) {
    requireNonNull(eventIds, "eventIds must not be null");
    requireSelectionSize(eventIds.size());
    if (eventIds.isEmpty()) {
      return 0;
    }
    int deleted =
        db.write(
            "discard " + eventIds.size() + " dead letters",
            tx ->
                tx.deleteFrom(OUTBOX_EVENTS)
                    .where(OUTBOX_EVENTS.ID.in(eventIds))
                    .and(EventConditions.discardable())
                    .execute());
    LOG.info(
        "pgoutbox-admin[{}] - Discarded {} of {} selected dead letters",
        db.schema,
        deleted,
        eventIds.size());
    return deleted;
  }

  /** Makes the unprocessed events {@code condition} names due at once, attempts reset. */
  int resetWhere(Condition condition, String what) {
    return db.write(
        what,
        tx ->
            tx.update(OUTBOX_EVENTS)
                .set(OUTBOX_EVENTS.ATTEMPTS, 0)
                .set(OUTBOX_EVENTS.RETRY_AFTER, (OffsetDateTime) null)
                .set(OUTBOX_EVENTS.DEAD_AT, (OffsetDateTime) null)
                .where(OUTBOX_EVENTS.PROCESSED_AT.isNull())
                .and(condition)
                .execute());
  }

  private static void requireSelectionSize(int size) {
    if (size > OutboxAdmin.MAX_SELECTION) {
      throw new IllegalArgumentException(
          "eventIds must hold at most " + OutboxAdmin.MAX_SELECTION + " ids, was " + size);
    }
  }
}

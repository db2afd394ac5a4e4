package dev.pgoutbox.admin;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_DEAD_LETTERS;
import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static dev.pgoutbox.db.jooq.Tables.OUTBOX_RELAYS;
import static java.util.Objects.requireNonNull;

import dev.pgoutbox.db.jooq.tables.OutboxEvents;
import dev.pgoutbox.relay.internal.FleetRegistry;
import dev.pgoutbox.relay.internal.Sql;
import dev.pgoutbox.relay.internal.StatsReader;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.jooq.Condition;
import org.jooq.Field;
import org.jooq.impl.DSL;

/** The admin's reads of the backlog, the dead letters and the relay registry. */
final class BacklogReads {

  private final AdminDatabase db;

  BacklogReads(AdminDatabase db) {
    this.db = db;
  }

  List<DeadLetter> deadLetters(int limit, long afterPosition) {
    if (limit < 1 || limit > OutboxAdmin.MAX_PAGE) {
      throw new IllegalArgumentException(
          "limit must be between 1 and " + OutboxAdmin.MAX_PAGE + ", was " + limit);
    }
    return db.read(
        "list dead letters",
        () ->
            db.dsl
                .selectFrom(OUTBOX_DEAD_LETTERS)
                .where(OUTBOX_DEAD_LETTERS.POSITION.gt(afterPosition))
                .orderBy(OUTBOX_DEAD_LETTERS.POSITION)
                .limit(limit)
                .fetch(
                    r ->
                        new DeadLetter(
                            r.getId(),
                            r.getPosition(),
                            r.getAggregateType(),
                            r.getAggregateId(),
                            r.getEventType(),
                            r.getPayload() == null ? "null" : r.getPayload().data(),
                            r.getAttempts(),
                            r.getLastError(),
                            r.getCreatedAt().toInstant(),
                            r.getDeadAt().toInstant())));
  }

  List<RelayInstance> relays() {
    var r = OUTBOX_RELAYS;
    Field<Long> age = DSL.field(Sql.ageMillis("{0}"), Long.class, r.HEARTBEAT_AT);
    return db.read(
        "read the relay registry",
        () ->
            db.dsl
                .select(
                    r.INSTANCE_ID,
                    r.RELAY_NAME,
                    r.SOURCE,
                    r.ORDERING,
                    r.DEAD_LETTER_POLICY,
                    r.STARTED_AT,
                    r.HEARTBEAT_AT,
                    age)
                .from(r)
                .orderBy(r.STARTED_AT, r.INSTANCE_ID)
                .fetch(
                    row -> {
                      Duration heartbeatAge = Duration.ofMillis(row.value8());
                      return new RelayInstance(
                          row.value1(),
                          row.value2(),
                          row.value3(),
                          row.value4(),
                          row.value5(),
                          row.value6().toInstant(),
                          row.value7().toInstant(),
                          heartbeatAge,
                          heartbeatAge.compareTo(FleetRegistry.EXPIRES_AFTER) <= 0);
                    }));
  }

  Optional<StoredEvent> event(UUID eventId, boolean withPayload) {
    requireNonNull(eventId, "eventId must not be null");
    return db.read(
        "read event " + eventId,
        () ->
            Optional.ofNullable(
                    db.dsl
                        .select(StoredEventRows.fields(withPayload))
                        .from(OUTBOX_EVENTS)
                        .where(OUTBOX_EVENTS.ID.eq(eventId))
                        .fetchOne())
                .map(r -> StoredEventRows.storedEvent(r, withPayload)));
  }

  List<StoredEvent> blockedAggregateHeads(int limit) {
    if (limit < 1 || limit > OutboxAdmin.MAX_PAGE) {
      throw new IllegalArgumentException(
          "limit must be between 1 and " + OutboxAdmin.MAX_PAGE + ", was " + limit);
    }
    OutboxEvents e = OUTBOX_EVENTS.as("e");
    return db.read(
        "list the blocked aggregates",
        () ->
            db.dsl
                .select(StoredEventRows.fields(e, false))
                .from(e)
                .where(StatsReader.blockedHead(e))
                .orderBy(e.POSITION)
                .limit(limit)
                .fetch(r -> StoredEventRows.storedEvent(r, false)));
  }

  List<StoredEvent> select(String what, Condition condition, int limit) {
    if (limit < 1 || limit > OutboxAdmin.MAX_SELECTION) {
      throw new IllegalArgumentException(
          "limit must be between 1 and " + OutboxAdmin.MAX_SELECTION + ", was " + limit);
    }
    return db.read(
        what,
        () ->
            db.dsl
                .select(StoredEventRows.fields(false))
                .from(OUTBOX_EVENTS)
                .where(condition)
                .orderBy(OUTBOX_EVENTS.POSITION)
                .limit(limit)
                .fetch(r -> StoredEventRows.storedEvent(r, false)));
  }

  long publishedWithin(Duration window) {
    return db.read(
        "count published events",
        () ->
            db.dsl
                .selectCount()
                .from(OUTBOX_EVENTS)
                .where(OUTBOX_EVENTS.PROCESSED_AT.gt(Sql.clockTimestampPlus(window.negated())))
                .fetchOne(0, Long.class));
  }
}

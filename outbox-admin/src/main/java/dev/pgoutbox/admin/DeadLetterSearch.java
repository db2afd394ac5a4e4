package dev.pgoutbox.admin;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_DEAD_LETTERS;
import static java.util.Objects.requireNonNull;

import java.time.ZoneOffset;
import java.util.List;
import org.jooq.Condition;
import org.jooq.impl.DSL;

/** {@link OutboxAdmin#deadLetters(DeadLetterQuery)}: a filtered page of the dead-letter view. */
final class DeadLetterSearch {

  private final AdminDatabase db;

  DeadLetterSearch(AdminDatabase db) {
    this.db = db;
  }

  List<StoredEvent> page(DeadLetterQuery query) {
    requireNonNull(query, "query must not be null");
    var d = OUTBOX_DEAD_LETTERS;
    Condition filter = filter(query);
    return db.read(
        "list dead letters",
        () ->
            db.dsl
                .select(
                    d.ID,
                    d.POSITION,
                    d.AGGREGATE_TYPE,
                    d.AGGREGATE_ID,
                    d.EVENT_TYPE,
                    d.HEADERS,
                    d.ATTEMPTS,
                    d.LAST_ERROR,
                    d.CREATED_AT,
                    d.DEAD_AT)
                .from(d)
                .where(filter)
                .orderBy(query.newestFirst() ? d.POSITION.desc() : d.POSITION.asc())
                .limit(query.limit())
                .fetch(
                    r ->
                        new StoredEvent(
                            r.value1(),
                            r.value2(),
                            r.value3(),
                            r.value4(),
                            r.value5(),
                            r.value6() == null ? "{}" : r.value6().data(),
                            null,
                            r.value7(),
                            r.value8(),
                            r.value9().toInstant(),
                            null,
                            r.value10().toInstant(),
                            null,
                            false,
                            List.of())));
  }

  private static Condition filter(DeadLetterQuery query) {
    var d = OUTBOX_DEAD_LETTERS;
    Condition where = DSL.trueCondition();
    if (query.eventType() != null) {
      where = where.and(d.EVENT_TYPE.eq(query.eventType()));
    }
    if (query.aggregateType() != null) {
      where =
          where
              .and(d.AGGREGATE_TYPE.eq(query.aggregateType()))
              .and(d.AGGREGATE_ID.eq(query.aggregateId()));
    }
    if (query.since() != null) {
      where = where.and(d.DEAD_AT.ge(query.since().atOffset(ZoneOffset.UTC)));
    }
    if (query.errorContains() != null) {
      where = where.and(d.LAST_ERROR.containsIgnoreCase(query.errorContains()));
    }
    if (query.after() > 0) {
      where =
          where.and(
              query.newestFirst() ? d.POSITION.lt(query.after()) : d.POSITION.gt(query.after()));
    }
    return where;
  }
}

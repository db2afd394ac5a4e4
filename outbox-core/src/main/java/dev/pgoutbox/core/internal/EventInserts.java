package dev.pgoutbox.core.internal;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;

import dev.pgoutbox.db.jooq.tables.records.OutboxEventsRecord;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.Insert;
import org.jooq.InsertValuesStep6;
import org.jooq.JSONB;
import org.jooq.Record6;
import org.jooq.Row6;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;

/**
 * The writer's {@code INSERT} statements, through the generated table: plain, or taking the
 * transaction-level advisory locks that serialize the writers of one aggregate (the one place where
 * the writer sends SQL that the generated tables cannot express).
 *
 * <p>The lock key of an aggregate is {@code hashtextextended(aggregate_type || ':' || aggregate_id,
 * 0)}, so hosts can take the same lock in their own SQL.
 */
public final class EventInserts {

  private EventInserts() {}

  /** The lock key text of an aggregate (hashed by PostgreSQL). */
  public static String lockKey(String aggregateType, String aggregateId) {
    return aggregateType + ':' + aggregateId;
  }

  /** One multi-row {@code INSERT} of {@code rows}. */
  public static Insert<OutboxEventsRecord> plain(DSLContext tx, List<OutboxEventsRecord> rows) {
    InsertValuesStep6<OutboxEventsRecord, UUID, String, String, String, JSONB, JSONB> insert =
        into(tx);
    for (OutboxEventsRecord row : rows) {
      insert =
          insert.values(
              row.getId(),
              row.getAggregateType(),
              row.getAggregateId(),
              row.getEventType(),
              row.getPayload(),
              row.getHeaders());
    }
    return insert;
  }

  /**
   * One {@code INSERT} that first takes the transaction-level advisory locks of {@code sortedKeys},
   * waiting for each in the order given, and only then inserts the rows (and so draws their
   * positions):
   *
   * <pre>{@code
   * insert into outbox_events (id, aggregate_type, aggregate_id, event_type, payload, headers)
   * select v.* from (values (...), ...) as v(...)
   *   cross join (select count(pg_advisory_xact_lock(hashtextextended(k, 0))) from unnest(?) k) l
   * }</pre>
   *
   * The lock subquery is an aggregate, so it runs to the end before the join yields its first row:
   * no row is inserted before every lock is held. The caller sorts the keys so that two writers
   * never lock the same keys in opposite orders. PostgreSQL releases them at commit or rollback.
   */
  public static Insert<OutboxEventsRecord> holdingLocks(
      DSLContext tx, List<OutboxEventsRecord> rows, List<String> sortedKeys) {
    Field<String> key = DSL.field(DSL.name("k", "key"), SQLDataType.VARCHAR);
    Table<?> locks =
        DSL.select(
                DSL.count(
                    DSL.function(
                        "pg_advisory_xact_lock",
                        SQLDataType.OTHER,
                        DSL.function("hashtextextended", SQLDataType.BIGINT, key, DSL.inline(0)))))
            .from(DSL.unnest(sortedKeys.toArray(String[]::new)).as("k", "key"))
            .asTable("pgoutbox_locks");
    List<Row6<UUID, String, String, String, JSONB, JSONB>> values = new ArrayList<>(rows.size());
    for (OutboxEventsRecord row : rows) {
      values.add(
          DSL.row(
              DSL.val(row.getId(), OUTBOX_EVENTS.ID),
              DSL.val(row.getAggregateType(), OUTBOX_EVENTS.AGGREGATE_TYPE),
              DSL.val(row.getAggregateId(), OUTBOX_EVENTS.AGGREGATE_ID),
              DSL.val(row.getEventType(), OUTBOX_EVENTS.EVENT_TYPE),
              DSL.val(row.getPayload(), OUTBOX_EVENTS.PAYLOAD),
              DSL.val(row.getHeaders(), OUTBOX_EVENTS.HEADERS)));
    }
    @SuppressWarnings({"unchecked", "rawtypes"})
    Table<Record6<UUID, String, String, String, JSONB, JSONB>> v =
        DSL.values(values.toArray(Row6[]::new))
            .as("v", "id", "aggregate_type", "aggregate_id", "event_type", "payload", "headers");
    return into(tx)
        .select(
            DSL.select(
                    v.field(0, UUID.class),
                    v.field(1, String.class),
                    v.field(2, String.class),
                    v.field(3, String.class),
                    v.field(4, JSONB.class),
                    v.field(5, JSONB.class))
                .from(v)
                .crossJoin(locks));
  }

  private static InsertValuesStep6<OutboxEventsRecord, UUID, String, String, String, JSONB, JSONB>
      into(DSLContext tx) {
    return tx.insertInto(
        OUTBOX_EVENTS,
        OUTBOX_EVENTS.ID,
        OUTBOX_EVENTS.AGGREGATE_TYPE,
        OUTBOX_EVENTS.AGGREGATE_ID,
        OUTBOX_EVENTS.EVENT_TYPE,
        OUTBOX_EVENTS.PAYLOAD,
        OUTBOX_EVENTS.HEADERS);
  }
}

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
import org.jooq.Record1;
import org.jooq.Record6;
import org.jooq.Row1;
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
 *
 * <p>These statements run in the host's session, with the host's {@code search_path}, which may
 * list a schema that another role can create objects in. So every function and every type they name
 * is qualified with {@code pg_catalog}, and they use no operator: nothing another role plants on
 * the path can match (an overload of {@code hashtextextended(varchar, integer)} planted in {@code
 * public} used to run in every writer's session). Strings are bound as {@code varchar} into {@code
 * varchar} columns, which needs no cast at all.
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
              uuid(row.getId()),
              DSL.val(row.getAggregateType()),
              DSL.val(row.getAggregateId()),
              DSL.val(row.getEventType()),
              jsonb(row.getPayload()),
              jsonb(row.getHeaders()));
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
   *   cross join (select pg_catalog.count(pg_catalog.pg_advisory_xact_lock(
   *       pg_catalog.hashtextextended(cast(k.key as pg_catalog.text), 0))) from (values (?), ...) k) l
   * }</pre>
   *
   * The lock subquery is an aggregate, so it runs to the end before the join yields its first row:
   * no row is inserted before every lock is held. The caller sorts the keys so that two writers
   * never lock the same keys in opposite orders. PostgreSQL releases them at commit or rollback.
   */
  public static Insert<OutboxEventsRecord> holdingLocks(
      DSLContext tx, List<OutboxEventsRecord> rows, List<String> sortedKeys) {
    List<Row1<String>> keyRows = new ArrayList<>(sortedKeys.size());
    for (String key : sortedKeys) {
      keyRows.add(DSL.row(DSL.val(key)));
    }
    @SuppressWarnings({"unchecked", "rawtypes"})
    Table<Record1<String>> keys = DSL.values(keyRows.toArray(Row1[]::new)).as("k", "key");
    Table<?> locks =
        DSL.select(
                DSL.field(
                    "pg_catalog.count(pg_catalog.pg_advisory_xact_lock("
                        + "pg_catalog.hashtextextended(cast({0} as pg_catalog.text), 0)))",
                    SQLDataType.BIGINT, keys.field(0)))
            .from(keys)
            .asTable("pgoutbox_locks");
    List<Row6<UUID, String, String, String, JSONB, JSONB>> values = new ArrayList<>(rows.size());
    for (OutboxEventsRecord row : rows) {
      values.add(
          DSL.row(
              uuid(row.getId()),
              DSL.val(row.getAggregateType()),
              DSL.val(row.getAggregateId()),
              DSL.val(row.getEventType()),
              jsonb(row.getPayload()),
              jsonb(row.getHeaders())));
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

  /** {@code cast(? as pg_catalog.uuid)}, the id bound as its text. */
  private static Field<UUID> uuid(UUID id) {
    return DSL.field("cast({0} as pg_catalog.uuid)", SQLDataType.UUID, DSL.val(id.toString()));
  }

  /** {@code cast(? as pg_catalog.jsonb)}, the document bound as its text. */
  private static Field<JSONB> jsonb(JSONB json) {
    return DSL.field("cast({0} as pg_catalog.jsonb)", SQLDataType.JSONB, DSL.val(json.data()));
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

package dev.pgoutbox.docs;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;

import dev.pgoutbox.core.OutboxEvent;
import java.util.Map;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.JSONB;

/**
 * Writes outbox rows straight through the generated table, as a writer would, with the checker's
 * {@code {"aggregate": a, "seq": n}} payload; {@link #event} makes the same event for {@code
 * Outbox.append}.
 */
final class EventRows {

  private EventRows() {}

  /** The event of aggregate {@code order/<aggregate>} with sequence number {@code seq}. */
  public static OutboxEvent event(String aggregate, int seq) {
    return OutboxEvent.of(
        "order", aggregate, "order.step", Map.of("aggregate", aggregate, "seq", seq));
  }

  /** Inserts one event of aggregate {@code order/<aggregate>} with sequence number {@code seq}. */
  public static UUID insert(DSLContext dsl, String aggregate, int seq) {
    return insert(dsl, "order", aggregate, "order.step", seq);
  }

  /** Inserts one event with the checker's payload. */
  public static UUID insert(
      DSLContext dsl, String aggregateType, String aggregate, String eventType, int seq) {
    UUID id = UUID.randomUUID();
    dsl.insertInto(OUTBOX_EVENTS)
        .set(OUTBOX_EVENTS.ID, id)
        .set(OUTBOX_EVENTS.AGGREGATE_TYPE, aggregateType)
        .set(OUTBOX_EVENTS.AGGREGATE_ID, aggregate)
        .set(OUTBOX_EVENTS.EVENT_TYPE, eventType)
        .set(
            OUTBOX_EVENTS.PAYLOAD,
            JSONB.valueOf("{\"aggregate\": \"" + aggregate + "\", \"seq\": " + seq + "}"))
        .set(OUTBOX_EVENTS.HEADERS, JSONB.valueOf("{\"traceparent\": \"00-test-" + seq + "\"}"))
        .execute();
    return id;
  }
}

package dev.pgoutbox.core;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;

import dev.pgoutbox.db.jooq.tables.records.OutboxEventsRecord;
import dev.pgoutbox.testing.TestSchema;
import java.util.List;

/** Reads what the tests wrote, through the generated tables. */
final class Stored {

  private Stored() {}

  /** Every outbox row of the test class's schema, in position order. */
  static List<OutboxEventsRecord> events(TestSchema db) {
    return db.dsl().selectFrom(OUTBOX_EVENTS).orderBy(OUTBOX_EVENTS.POSITION).fetch();
  }

  static int eventCount(TestSchema db) {
    return db.dsl().fetchCount(OUTBOX_EVENTS);
  }

  /** Rows of a table of the test class's schema (unqualified names resolve there). */
  static int count(TestSchema db, String table) {
    return db.dsl().fetchCount(org.jooq.impl.DSL.table(org.jooq.impl.DSL.name(table)));
  }
}

package dev.pgoutbox.example.orders;

import dev.pgoutbox.testing.TestSchema;

/** The order service's own look-ups for assertions. */
final class Db {

  private Db() {}

  /** Orders whose last event shipping has not applied (lost or not yet consumed). */
  static long ordersNotCaughtUp(TestSchema db, String schema) {
    return db.queryLong(
        "SELECT count(*) FROM "
            + schema
            + ".orders o LEFT JOIN "
            + schema
            + ".shipping_progress p ON p.order_id = o.id"
            + " WHERE p.last_version IS DISTINCT FROM o.version");
  }
}

package dev.pgoutbox.docs.snippets;

import java.math.BigDecimal;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.Record;
import org.jooq.Table;
import org.jooq.impl.DSL;

/** The host application the snippets stand in: an order table and what it writes and ships. */
final class Shop {

  private Shop() {}

  /** An order, the business row the events describe. */
  record Order(String id, BigDecimal total) {}

  /** What a reservation event carries. */
  record Reserved(String orderId, String warehouse) {}

  static final Table<Record> ORDERS = DSL.table(DSL.name("orders"));
  static final Field<String> ORDER_ID = DSL.field(DSL.name("id"), String.class);
  static final Field<BigDecimal> ORDER_TOTAL = DSL.field(DSL.name("total"), BigDecimal.class);
  static final Table<Record> INVOICES = DSL.table(DSL.name("invoices"));
  static final Field<UUID> INVOICE_EVENT = DSL.field(DSL.name("event_id"), UUID.class);

  /** The consumer's own write, done once per event. */
  interface Shipments {
    void create(DSLContext tx, Object message);
  }
}

package dev.pgoutbox.docs.snippets;

import static dev.pgoutbox.docs.snippets.Shop.ORDERS;
import static dev.pgoutbox.docs.snippets.Shop.ORDER_ID;
import static dev.pgoutbox.docs.snippets.Shop.ORDER_TOTAL;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.docs.snippets.Shop.Order;
import dev.pgoutbox.docs.snippets.Shop.Reserved;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.jooq.DSLContext;
import org.postgresql.xa.PGXADataSource;

/** docs/writing-events.md. */
final class WritingEventsSnippets {

  private WritingEventsSnippets() {}

  static void write(
      ObjectMapper applicationObjectMapper,
      DSLContext dsl,
      Connection connection,
      Order order,
      String warehouse,
      String cid)
      throws SQLException {
    // snippet:start append
    Outbox outbox =
        Outbox.builder()
            .schema("outbox") // where OutboxSchema.migrate put the tables
            .objectMapper(applicationObjectMapper) // optional: your JSON conventions
            .headers(() -> Map.of("traceparent", currentTraceparent())) // optional: every event
            .build(); // once; immutable and thread-safe

    // jOOQ
    dsl.transaction(
        tx -> {
          tx.dsl()
              .insertInto(ORDERS)
              .set(ORDER_ID, order.id())
              .set(ORDER_TOTAL, order.total())
              .execute();
          UUID id =
              outbox.append(tx.dsl(), OutboxEvent.of("order", order.id(), "order.created", order));
        });

    // plain JDBC (Spring: the connection of the current @Transactional)
    connection.setAutoCommit(false);
    insertOrder(connection, order);
    List<UUID> ids =
        outbox.appendAll(
            connection,
            List.of(
                OutboxEvent.of("order", order.id(), "order.created", order),
                OutboxEvent.builder()
                    .aggregate("order", order.id())
                    .eventType("order.reserved")
                    .payload(new Reserved(order.id(), warehouse))
                    .header("correlation-id", cid)
                    .build()));
    connection.commit();
    // snippet:end append
    ids.size();
  }

  static PGXADataSource xa() {
    // snippet:start xa
    PGXADataSource xa = new PGXADataSource();
    xa.setURL("jdbc:postgresql://db/app");
    xa.setOptions("-c pgoutbox.notify=off"); // or ?options=-c%20pgoutbox.notify%3Doff in the URL
    // snippet:end xa
    return xa;
  }

  private static String currentTraceparent() {
    return "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  }

  private static void insertOrder(Connection connection, Order order) {}
}

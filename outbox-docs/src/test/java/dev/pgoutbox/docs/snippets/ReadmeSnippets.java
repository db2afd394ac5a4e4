package dev.pgoutbox.docs.snippets;

import static dev.pgoutbox.docs.snippets.Shop.ORDERS;

import dev.pgoutbox.core.Inbox;
import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.core.consumer.KafkaEventIds;
import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.docs.snippets.Shop.Order;
import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.kafka.KafkaPublisher;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.UUID;
import java.util.concurrent.ScheduledExecutorService;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.jooq.Configuration;
import org.jooq.DSLContext;
import org.jooq.Record;

/** README.md. */
final class ReadmeSnippets {

  private ReadmeSnippets() {}

  static void dualWrite(DataSource db, KafkaProducer<String, String> kafka, Order order)
      throws SQLException {
    // snippet:start dual-write
    try (Connection tx = db.getConnection()) {
      tx.setAutoCommit(false);
      insertOrder(tx, order);
      tx.commit();
    }
    kafka.send(new ProducerRecord<>("orders", order.id(), json(order))); // the process dies here:
    // the order exists, the event never does
    // snippet:end dual-write
  }

  static void outboxWrite(DSLContext dsl, Outbox outbox, Order order, Record orderRecord) {
    // snippet:start outbox-write
    dsl.transaction(
        tx -> {
          tx.dsl().insertInto(ORDERS).set(orderRecord).execute();
          // same commit; the aggregate id is a String
          outbox.append(tx.dsl(), OutboxEvent.of("order", order.id(), "order.created", order));
        });
    // The relay, running in your application's executor, publishes committed events and retries
    // until the broker has them. Consumers skip redeliveries by event id (Inbox).
    // snippet:end outbox-write
  }

  static void quickStart(
      DataSource dataSource,
      DSLContext dsl,
      Order order,
      ScheduledExecutorService scheduledExecutor,
      Record orderRecord,
      ConsumerRecord<String, byte[]> record) {
    // snippet:start quick-start
    // 1. Schema: the library's own Flyway migrations, in a schema you choose (idempotent).
    OutboxSchema.migrate(dataSource, "outbox");

    // 2. Write events in your transaction.
    Outbox outbox = Outbox.builder().schema("outbox").build();
    dsl.transaction(
        tx -> {
          tx.dsl().insertInto(ORDERS).set(orderRecord).execute();
          outbox.append(tx.dsl(), OutboxEvent.of("order", order.id(), "order.created", order));
        });

    // 3. Relay them, on your executor.
    OutboxRelay relay =
        OutboxRelay.builder()
            .name("orders")
            .dataSource(dataSource)
            .schema("outbox")
            .publisher(KafkaPublisher.builder("localhost:9092").build())
            .executor(scheduledExecutor)
            .build();
    relay.start();

    // 4. Consume once per consumer.
    Inbox inbox = Inbox.builder().schema("outbox").build();
    UUID eventId = KafkaEventIds.eventId(record);
    dsl.transaction(tx -> inbox.handleOnce(tx.dsl(), "shipping", eventId, () -> ship(tx, record)));
    // snippet:end quick-start
  }

  private static void ship(Configuration tx, ConsumerRecord<String, byte[]> record) {}

  private static void insertOrder(Connection tx, Order order) throws SQLException {
    try (PreparedStatement insert = tx.prepareStatement("insert into orders values (?, ?)")) {
      insert.setString(1, order.id());
      insert.setBigDecimal(2, order.total());
      insert.executeUpdate();
    }
  }

  private static String json(Order order) {
    return "{\"id\": \"" + order.id() + "\", \"total\": " + order.total() + "}";
  }
}

package dev.pgoutbox.docs.snippets;

import static dev.pgoutbox.docs.snippets.Shop.ORDERS;
import static dev.pgoutbox.docs.snippets.Shop.ORDER_ID;
import static dev.pgoutbox.docs.snippets.Shop.ORDER_TOTAL;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.core.OutboxTransport;
import dev.pgoutbox.db.OutboxRoles;
import dev.pgoutbox.docs.snippets.Shop.Order;
import dev.pgoutbox.relay.Completion;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.wal.WalRelay;
import javax.sql.DataSource;
import org.jooq.DSLContext;

/** docs/wal-messages.md and docs/wal-completion.md. */
final class WalMessagesSnippets {

  private WalMessagesSnippets() {}

  static void messages(
      HikariDataSource hikari, Publisher kafkaPublisher, DSLContext dsl, Order order) {
    // snippet:start wal-messages
    // 1. The relays first: on MESSAGES they publish both the rows and the messages.
    WalRelay relay =
        WalRelay.builder()
            .name("orders")
            .dataSource(hikari)
            .schema("outbox")
            .transport(OutboxTransport.MESSAGES)
            .publisher(kafkaPublisher)
            .build();
    relay.start(); // refuses to start while PUBLIC may execute pg_logical_emit_message (Grants)

    // 2. Then the writers.
    Outbox outbox = Outbox.builder().schema("outbox").transport(OutboxTransport.MESSAGES).build();
    dsl.transaction(
        tx -> {
          tx.dsl()
              .insertInto(ORDERS)
              .set(ORDER_ID, order.id())
              .set(ORDER_TOTAL, order.total())
              .execute();
          outbox.append(tx.dsl(), OutboxEvent.of("order", order.id(), "order.created", order));
        });
    // snippet:end wal-messages
  }

  static void grants(DataSource superuser) {
    // snippet:start grant-wal-messages
    OutboxRoles.grantWalMessages(superuser, "outbox", "orders_app", "orders_relay");
    // snippet:end grant-wal-messages
  }

  static WalRelay marking(HikariDataSource hikari, Publisher publisher) {
    // snippet:start wal-completion-mark
    // Keep a history of delivered events (admin queries by processed_at, retention by age):
    WalRelay relay =
        WalRelay.builder()
            .dataSource(hikari)
            .schema("outbox")
            .publisher(publisher)
            .config(RelayConfig.builder().completion(Completion.MARK_PROCESSED).build())
            .build();
    // snippet:end wal-completion-mark
    return relay;
  }
}

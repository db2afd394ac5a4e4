package dev.pgoutbox.docs.snippets;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.db.OutboxRoles;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.wal.WalRelay;
import java.util.concurrent.ScheduledExecutorService;
import javax.sql.DataSource;

/** docs/wal-relay.md. */
final class WalRelaySnippets {

  private WalRelaySnippets() {}

  static void walRelay(
      HikariDataSource hikari, Publisher kafkaPublisher, ScheduledExecutorService executor) {
    // snippet:start wal-relay
    WalRelay relay =
        WalRelay.builder()
            .name("orders")
            .dataSource(hikari) // pool: completions, parking, the table drainer
            .schema("outbox")
            .publisher(kafkaPublisher)
            .executor(executor) // the host's: three platform threads
            .config(RelayConfig.builder().batchSize(500).build())
            .build();
    relay.start(); // checks wal_level, creates publication and slot if the role may, attaches or
    // stands by (a new slot waits for open transactions: at most slotCreationTimeout, 30 s)
    // snippet:end wal-relay
  }

  static void grants(DataSource superuser) {
    // snippet:start grant-wal-relay
    OutboxRoles.grant(superuser, "outbox", "orders_app", "orders_relay", "orders_consumer");
    OutboxRoles.grantWalRelay(superuser, "outbox", "orders_relay", "pgoutbox_outbox"); // idempotent
    // snippet:end grant-wal-relay
  }
}

package dev.pgoutbox.docs.snippets;

import dev.pgoutbox.db.OutboxRoles;
import dev.pgoutbox.db.OutboxSchema;
import java.util.List;
import javax.sql.DataSource;

/** docs/security.md. */
final class SecuritySnippets {

  private SecuritySnippets() {}

  static void grant(DataSource ownerDataSource) {
    // snippet:start grant
    OutboxSchema.migrate(ownerDataSource, "outbox");
    OutboxRoles.grant(ownerDataSource, "outbox", "orders_app", "orders_relay", "orders_consumer");
    // snippet:end grant
  }

  static void advisoryLocks(DataSource superuserDataSource) {
    // snippet:start restrict-advisory-locks
    OutboxRoles.restrictAdvisoryLocks(
        superuserDataSource, List.of("orders_app", "orders_relay", "orders_owner"));
    // snippet:end restrict-advisory-locks
  }
}

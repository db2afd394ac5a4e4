package dev.pgoutbox.admin;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.testing.PgBouncer;
import dev.pgoutbox.testing.TestDatabase;
import dev.pgoutbox.testing.TestSchema;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The admin through PgBouncer in transaction mode, as docs/operations.md promises: each call a
 * transaction that may run on another server session.
 */
class AdminPgBouncerIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static PgBouncer bouncer;
  private static HikariDataSource pool;

  @BeforeAll
  static void start() {
    bouncer = PgBouncer.transactionMode(TestDatabase.get(), 2);
    pool = bouncer.pool(4, "admin-through-pgbouncer");
  }

  @AfterAll
  static void stop() {
    if (bouncer != null) {
      bouncer.close();
    }
  }

  @Test
  void theAdminWorksThroughTransactionPooling() {
    for (int i = 1; i <= 20; i++) {
      EventRows.insert(db.dsl(), "a", i);
    }
    UUID dead = EventRows.insert(db.dsl(), "b", 1);
    db.execute("update outbox_events set dead_at = now() where id = '" + dead + "'");
    OutboxAdmin admin = OutboxAdmin.builder().dataSource(pool).schema(db.schema()).build();
    // More calls than pgjdbc's prepare threshold (5), each a transaction of its own.
    for (int call = 0; call < 12; call++) {
      assertThat(admin.pendingCount()).isEqualTo(20);
      assertThat(admin.stats().deadLetters()).isEqualTo(1);
      assertThat(admin.deadLetters(10, 0)).extracting(DeadLetter::id).containsExactly(dead);
    }
    assertThat(admin.retry(dead)).isTrue();
    assertThat(admin.pendingCount()).isEqualTo(21);
  }
}

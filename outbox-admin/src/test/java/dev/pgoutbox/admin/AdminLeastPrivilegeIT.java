package dev.pgoutbox.admin;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.relay.testing.LeastPrivilegeRoles;
import dev.pgoutbox.testing.TestSchema;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The admin as the relay's role of {@code OutboxRoles.grant} (no superuser, no ownership): the
 * grants cover its reads, retries, discards and retention, as grants.sql says.
 */
class AdminLeastPrivilegeIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static LeastPrivilegeRoles roles;
  private static HikariDataSource relayPool;

  @BeforeAll
  static void createRoles() {
    roles = LeastPrivilegeRoles.grant(db, "pgoutbox-admin-least-privilege");
    relayPool = roles.poolAs(roles.relay(), 2, "admin-least-privilege");
  }

  @AfterAll
  static void dropRoles() {
    if (roles != null) {
      roles.close();
    }
  }

  @Test
  void theRelaysRoleMayDoWhatAnOperatorAsks() {
    UUID retried = EventRows.insert(db.dsl(), "a", 1);
    UUID discarded = EventRows.insert(db.dsl(), "b", 1);
    EventRows.insert(db.dsl(), "c", 1);
    db.execute(
        "update outbox_events set dead_at = now(), attempts = 3, last_error = 'boom'"
            + " where aggregate_id in ('a', 'b')");
    db.execute("update outbox_events set processed_at = now() where aggregate_id = 'c'");
    OutboxAdmin admin = OutboxAdmin.builder().dataSource(relayPool).schema(db.schema()).build();

    admin.checkAccess(true);
    assertThat(admin.stats().deadLetters()).isEqualTo(2);
    assertThat(admin.deadLetters(10, 0))
        .extracting(DeadLetter::id)
        .containsExactly(retried, discarded);
    assertThat(admin.oldestTransactionAge()).isGreaterThanOrEqualTo(Duration.ZERO);
    assertThat(admin.status().stats().deadLetters()).isEqualTo(2);
    assertThat(admin.retry(retried)).isTrue();
    assertThat(admin.discard(discarded)).isTrue();
    assertThat(admin.purgeProcessed(Duration.ZERO, 100)).isEqualTo(1);
    assertThat(db.queryLong("select count(*) from outbox_events")).isEqualTo(1);
    assertThat(db.queryLong("select count(*) from outbox_events where attempts = 0")).isEqualTo(1);
  }
}

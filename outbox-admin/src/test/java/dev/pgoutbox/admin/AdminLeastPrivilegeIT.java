package dev.pgoutbox.admin;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.db.OutboxRoles;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.testing.TestSchema;
import java.time.Duration;
import java.util.List;
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

  private static final String PASSWORD = "pgoutbox-admin-least-privilege";

  private static String writerRole;
  private static String relayRole;
  private static String consumerRole;
  private static HikariDataSource relayPool;

  @BeforeAll
  static void createRoles() {
    // Role names are cluster-wide: derive them from this run's unique schema name.
    writerRole = db.schema() + "_writer";
    relayRole = db.schema() + "_relay";
    consumerRole = db.schema() + "_consumer";
    for (String role : List.of(writerRole, relayRole, consumerRole)) {
      db.execute("CREATE ROLE " + role + " LOGIN PASSWORD '" + PASSWORD + "'");
    }
    OutboxRoles.grant(db.dataSource(), db.schema(), writerRole, relayRole, consumerRole);
    String url =
        db.jdbcUrl()
            .replaceAll("([?&])(user|password)=[^&]*", "$1")
            .replaceAll("&&+", "&")
            .replace("?&", "?");
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(
        url + (url.endsWith("&") ? "" : "&") + "user=" + relayRole + "&password=" + PASSWORD);
    config.setMaximumPoolSize(2);
    config.setMinimumIdle(0);
    config.setPoolName("admin-least-privilege");
    relayPool = new HikariDataSource(config);
  }

  @AfterAll
  static void dropRoles() {
    if (relayPool != null) {
      relayPool.close();
    }
    for (String role : new String[] {writerRole, relayRole, consumerRole}) {
      if (role != null) {
        db.execute("DROP OWNED BY " + role);
        db.execute("DROP ROLE " + role);
      }
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

package dev.pgoutbox.admin;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.relay.testing.ShadowedSearchPath;
import dev.pgoutbox.testing.TestSchema;
import java.io.IOException;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The admin in sessions whose {@code search_path} lists a hostile role's schema before pg_catalog,
 * planted with a recording copy of every function and operator pgoutbox's SQL could resolve by name
 * (the relay's {@code plant-shadows.sql}, see the relay's HostileSearchPathIT): its reads, retries,
 * discards and retention run none of them.
 */
class AdminHostileSearchPathIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static ShadowedSearchPath shadows;
  private static HikariDataSource hostilePathPool;

  @BeforeAll
  static void plantShadows() throws IOException {
    shadows = ShadowedSearchPath.plant(db, "admin-hostile-path", 2);
    hostilePathPool = shadows.pool();
  }

  @AfterAll
  static void dropShadows() {
    if (shadows != null) {
      shadows.close();
    }
  }

  @BeforeEach
  void emptyTables() {
    db.execute("TRUNCATE outbox_events");
    shadows.clearHits();
  }

  private static List<String> hits() {
    return shadows.hits();
  }

  @Test
  void theShadowsRunInSessionsWithTheHostilePath() throws Exception {
    // The control: a host's own unqualified call on a varchar is taken over, so a clean run
    // below means the admin's SQL resolved nothing through the path.
    try (Connection connection = hostilePathPool.getConnection();
        Statement statement = connection.createStatement()) {
      statement.execute("select md5(cast('x' as varchar)), cast('a' as varchar) = 'b'");
    }
    assertThat(hits())
        .anyMatch(hit -> hit.startsWith("md5(character varying)"))
        .anyMatch(hit -> hit.startsWith("=(character varying, character varying)"));
  }

  @Test
  void nothingPlantedRunsInTheAdminsReadsAndWrites() {
    UUID retried = EventRows.insert(db.dsl(), "a", 1);
    UUID discarded = EventRows.insert(db.dsl(), "b", 1);
    EventRows.insert(db.dsl(), "c", 1);
    EventRows.insert(db.dsl(), "c", 2);
    db.execute(
        "update outbox_events set dead_at = now(), attempts = 3, last_error = 'boom'"
            + " where id in ('"
            + retried
            + "', '"
            + discarded
            + "')");
    db.execute("update outbox_events set processed_at = now() where aggregate_id = 'c'");

    OutboxAdmin admin =
        OutboxAdmin.builder().dataSource(hostilePathPool).schema(db.schema()).build();
    assertThat(admin.stats().deadLetters()).isEqualTo(2);
    assertThat(admin.deadLetters(10, 0)).extracting(DeadLetter::id).contains(retried, discarded);
    assertThat(admin.event(retried, true)).isPresent();
    admin.status();
    admin.relays();
    admin.blockedAggregateHeads(10);
    assertThat(admin.retry(retried)).isTrue();
    assertThat(admin.discard(discarded)).isTrue();
    assertThat(admin.purgeProcessed(Duration.ZERO, 100)).isEqualTo(2);

    assertThat(hits()).as("planted functions and operators that ran").isEmpty();
  }
}

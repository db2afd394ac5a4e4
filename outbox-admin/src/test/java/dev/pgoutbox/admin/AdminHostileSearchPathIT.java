package dev.pgoutbox.admin;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.testing.TestSchema;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
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

  private static String hostileRole;
  private static String shadow;
  private static HikariDataSource hostilePathPool;

  @BeforeAll
  static void plantShadows() throws IOException {
    hostileRole = db.schema() + "_hostile";
    shadow = db.schema() + "_shadow";
    db.execute("CREATE ROLE " + hostileRole + " NOLOGIN");
    db.execute("CREATE SCHEMA " + shadow + " AUTHORIZATION " + hostileRole);
    String plant;
    try (InputStream in =
        AdminHostileSearchPathIT.class.getResourceAsStream(
            "/dev/pgoutbox/relay/plant-shadows.sql")) {
      assertThat(in).as("plant-shadows.sql of the relay's test-jar").isNotNull();
      plant = new String(in.readAllBytes(), StandardCharsets.UTF_8).replace("__SHADOW__", shadow);
    }
    db.execute("SET ROLE " + hostileRole + ";\n" + plant + "\nRESET ROLE");
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(db.jdbcUrl());
    config.setMaximumPoolSize(2);
    config.setMinimumIdle(0);
    config.setPoolName("admin-hostile-path");
    config.setConnectionInitSql("SET search_path = " + shadow + ", pg_catalog, public");
    hostilePathPool = new HikariDataSource(config);
  }

  @AfterAll
  static void dropShadows() {
    if (hostilePathPool != null) {
      hostilePathPool.close();
    }
    if (hostileRole != null) {
      db.execute("DROP SCHEMA IF EXISTS " + shadow + " CASCADE");
      db.execute("DROP ROLE IF EXISTS " + hostileRole);
    }
  }

  @BeforeEach
  void emptyTables() {
    db.execute("TRUNCATE outbox_events, " + shadow + ".hits");
  }

  private static List<String> hits() {
    return db.dsl()
        .resultQuery("select sig || ' in: ' || query from " + shadow + ".hits")
        .fetch(0, String.class);
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

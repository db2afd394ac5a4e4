package dev.pgoutbox.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * A host that migrates with Boot's own Flyway (Boot 4.0's auto-configuration, running on the Flyway
 * 13 pgoutbox needs): with {@code pgoutbox.migrate=true} pgoutbox migrates after the host, in its
 * own history table; with {@code pgoutbox.migrate=false} the host's one Flyway run applies {@code
 * classpath:db/pgoutbox/migration} too.
 */
class HostFlywayIT {

  @RegisterExtension static final TestSchema db = TestSchema.empty();

  @Configuration(proxyBeanMethods = false)
  static class App {
    @Bean
    RecordingPublisher publisher() {
      return new RecordingPublisher();
    }
  }

  private ApplicationContextRunner runner(String schema) {
    return new ApplicationContextRunner()
        .withConfiguration(
            AutoConfigurations.of(
                DataSourceAutoConfiguration.class,
                DataSourceTransactionManagerAutoConfiguration.class,
                TransactionAutoConfiguration.class,
                FlywayAutoConfiguration.class,
                PgOutboxAutoConfiguration.class))
        .withUserConfiguration(App.class)
        .withPropertyValues(
            "spring.datasource.url=" + db.jdbcUrl().replace(db.schema(), schema),
            "spring.datasource.hikari.maximum-pool-size=2",
            "spring.flyway.schemas=" + schema,
            "pgoutbox.schema=" + schema,
            "pgoutbox.relay.name=boot-flyway",
            "pgoutbox.relay.poll-interval=200ms");
  }

  @Test
  void pgoutboxMigratesAfterTheHostsFlywayInItsOwnHistory() {
    String schema = db.schema() + "_own";
    try {
      runner(schema)
          .withPropertyValues("spring.flyway.locations=classpath:db/host-migration")
          .run(
              context -> {
                assertThat(context).hasNotFailed();
                assertThat(history(schema, "flyway_schema_history")).endsWith("1");
                assertThat(history(schema, "pgoutbox_schema_history"))
                    .endsWith("1,2,3,4,5,6,7,8,9,10,11,13");
                assertThat(
                        db.queryLong(
                            "SELECT count(*) FROM "
                                + schema
                                + ".pgoutbox_schema_history p, "
                                + schema
                                + ".flyway_schema_history h"
                                + " WHERE p.version = '1' AND h.version = '1'"
                                + " AND p.installed_on >= h.installed_on"))
                    .as("pgoutbox's V1 installed after the host's V1")
                    .isOne();
                appendAndPublish(context, "own-history");
              });
    } finally {
      db.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    }
  }

  @Test
  void withMigrateFalseTheHostsFlywayAppliesPgoutboxsLocation() {
    String schema = db.schema() + "_one";
    try {
      runner(schema)
          .withPropertyValues(
              "pgoutbox.migrate=false",
              "spring.flyway.locations="
                  + "classpath:db/host-migration-late,classpath:db/pgoutbox/migration")
          .run(
              context -> {
                assertThat(context).hasNotFailed();
                assertThat(history(schema, "flyway_schema_history"))
                    .endsWith("1,2,3,4,5,6,7,8,9,10,11,13,1000");
                assertThat(
                        db.queryLong(
                            "SELECT count(*) FROM information_schema.tables WHERE table_schema = '"
                                + schema
                                + "' AND table_name = 'pgoutbox_schema_history'"))
                    .isZero();
                appendAndPublish(context, "one-history");
              });
    } finally {
      db.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    }
  }

  private static void appendAndPublish(ApplicationContext context, String aggregateId) {
    UUID id =
        context
            .getBean(TransactionTemplate.class)
            .execute(
                status ->
                    context
                        .getBean(SpringOutbox.class)
                        .append(OutboxEvent.of("order", aggregateId, "order.placed", Map.of())));
    RecordingPublisher publisher = context.getBean(RecordingPublisher.class);
    Eventually.await(
        aggregateId + " published",
        Duration.ofSeconds(15),
        () -> publisher.delivered().stream().anyMatch(m -> m.id().equals(id)));
  }

  /** The successful versions of {@code table}, in order, comma-separated. */
  private static String history(String schema, String table) {
    try (var connection = db.dataSource().getConnection();
        var statement = connection.createStatement();
        var rows =
            statement.executeQuery(
                "SELECT string_agg(version, ',' ORDER BY installed_rank) FROM "
                    + schema
                    + "."
                    + table
                    + " WHERE success AND version IS NOT NULL")) {
      rows.next();
      return rows.getString(1);
    } catch (SQLException e) {
      throw new AssertionError(e);
    }
  }
}

package dev.pgoutbox.core;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.testing.TestSchema;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.conf.MappedSchema;
import org.jooq.conf.RenderMapping;
import org.jooq.conf.Settings;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The outbox tables may live in a schema of their own: statements name it, whatever the host's
 * {@code search_path} and jOOQ settings.
 */
class SchemaPlacementIT {

  /** The host's schema, first on the connections' search_path; it has outbox tables too. */
  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static String outboxSchema;

  @BeforeAll
  static void migrateAnotherSchema() {
    outboxSchema =
        "t_placement_" + Integer.toHexString(ThreadLocalRandom.current().nextInt(1 << 24));
    OutboxSchema.migrate(db.dataSource(), outboxSchema);
  }

  @AfterAll
  static void dropIt() {
    db.execute("DROP SCHEMA IF EXISTS " + outboxSchema + " CASCADE");
  }

  private static long countIn(String schema, UUID id) {
    return db.queryLong(
        "SELECT count(*) FROM " + schema + ".outbox_events WHERE id = '" + id + "'");
  }

  @Test
  void eventsGoToTheConfiguredSchemaNotTheSearchPath() throws SQLException {
    Outbox outbox = Outbox.builder().schema(outboxSchema).build();
    Inbox inbox = Inbox.builder().schema(outboxSchema).build();
    UUID id;
    try (Connection connection = db.dataSource().getConnection()) {
      connection.setAutoCommit(false);
      id = outbox.append(connection, OutboxEvent.of("order", "1", "order.created", Map.of()));
      inbox.handleOnce(connection, "billing", id, () -> {});
      connection.commit();
    }
    assertThat(countIn(outboxSchema, id)).isEqualTo(1);
    assertThat(countIn(db.schema(), id)).isZero();
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM "
                    + outboxSchema
                    + ".processed_events WHERE event_id = '"
                    + id
                    + "'"))
        .isEqualTo(1);
  }

  @Test
  void hostSettingsThatMapOtherSchemasOrOmitSchemasStillReachTheOutboxSchema() {
    Settings hostSettings =
        new Settings()
            .withRenderSchema(false)
            .withRenderMapping(
                new RenderMapping()
                    .withSchemata(new MappedSchema().withInput("app").withOutput("app_prod")));
    DSLContext host = DSL.using(db.dataSource(), SQLDialect.POSTGRES, hostSettings);
    Outbox outbox = Outbox.builder().schema(outboxSchema).build();

    UUID id =
        host.transactionResult(
            tx -> outbox.append(tx.dsl(), OutboxEvent.of("order", "2", "order.created", Map.of())));

    assertThat(countIn(outboxSchema, id)).isEqualTo(1);
    assertThat(countIn(db.schema(), id)).isZero();
    // The host's settings are left as they were.
    assertThat(hostSettings.getRenderMapping().getSchemata()).hasSize(1);
    assertThat(hostSettings.isRenderSchema()).isFalse();
  }

  @Test
  void hostContextOfAnotherDialectStillWritesPostgresqlJsonb() {
    DSLContext host = DSL.using(db.dataSource(), SQLDialect.DEFAULT);
    Outbox outbox = Outbox.builder().schema(outboxSchema).build();

    UUID id =
        host.transactionResult(
            tx ->
                outbox.append(
                    tx.dsl(), OutboxEvent.of("order", "3", "order.created", Map.of("a", 1))));

    assertThat(countIn(outboxSchema, id)).isEqualTo(1);
  }
}

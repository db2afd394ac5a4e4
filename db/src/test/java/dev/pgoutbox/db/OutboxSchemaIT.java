package dev.pgoutbox.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

class OutboxSchemaIT {

  @RegisterExtension static final DbTestSchema db = DbTestSchema.empty();

  @Test
  void migratesIntoTheChosenSchemaBesideTheHostsOwnFlyway() {
    // The host's migrations first, with Flyway's default history table, in the same schema.
    Flyway.configure()
        .dataSource(db.dataSource())
        .schemas(db.schema())
        .locations("classpath:db/host/migration")
        .load()
        .migrate();

    assertThat(OutboxSchema.migrate(db.dataSource(), db.schema())).isEqualTo(12);
    assertThat(OutboxSchema.migrate(db.dataSource(), db.schema()))
        .as("a second call applies nothing")
        .isZero();

    List<String> tables =
        db.dsl()
            .resultQuery(
                "select table_name from information_schema.tables where table_schema = ?"
                    + " order by table_name",
                db.schema())
            .fetch(0, String.class);
    assertThat(tables)
        .containsExactly(
            "flyway_schema_history",
            "orders",
            "outbox_dead_letters",
            "outbox_events",
            "outbox_relays",
            "pgoutbox_schema_history",
            "processed_events");
    assertThat(
            db.dsl()
                .fetchValue(
                    "select count(*) from " + db.schema() + ".flyway_schema_history", Long.class))
        .as("the host's history is untouched")
        .isEqualTo(1L);
  }

  @Test
  void createsTheSchemaWhenItDoesNotExist() throws Exception {
    String other = db.schema() + "_created";
    try {
      OutboxSchema.migrate(db.dataSource(), other);
      assertThat(
              db.dsl()
                  .fetchValue(
                      "select count(*) from information_schema.tables where table_schema = ?"
                          + " and table_name = 'outbox_events'",
                      other))
          .isEqualTo(1L);
    } finally {
      db.execute("drop schema if exists " + other + " cascade");
    }
  }

  @Test
  void aRoleThatRecordsFailuresKeepsDoingSoAfterVersion13AddsErrorHistory() throws Exception {
    String other = db.schema() + "_upgraded";
    String relayRole = other + "_relay";
    try {
      // A schema from before version 13 (11), with a relay role granted by column as grants.sql did
      // then.
      Flyway.configure()
          .dataSource(db.dataSource())
          .locations(OutboxSchema.MIGRATION_LOCATION)
          .schemas(other)
          .defaultSchema(other)
          .createSchemas(true)
          .table(OutboxSchema.HISTORY_TABLE)
          .target("11")
          .load()
          .migrate();
      db.execute("create role " + relayRole);
      db.execute(
          "grant update (attempts, retry_after, last_error, processed_at, dead_at, parked) on "
              + other
              + ".outbox_events to "
              + relayRole);

      OutboxSchema.migrate(db.dataSource(), other);

      assertThat(
              db.dsl()
                  .fetchValue(
                      "select has_column_privilege(?, ?, 'error_history', 'UPDATE')",
                      relayRole,
                      other + ".outbox_events"))
          .as("the relay role may append to error_history without a regrant")
          .isEqualTo(true);
      assertThat(
              db.dsl()
                  .fetchValue(
                      "select has_column_privilege('public', ?, 'error_history', 'UPDATE')",
                      other + ".outbox_events"))
          .as("and nobody else was given it")
          .isEqualTo(false);
    } finally {
      db.execute("drop schema if exists " + other + " cascade");
      db.execute("drop role if exists " + relayRole);
    }
  }

  @Test
  void refusesASchemaNameThatIsNotAnIdentifierBeforeTouchingTheDatabase() {
    assertThatThrownBy(() -> OutboxSchema.migrate(db.dataSource(), "x; drop schema public"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("schema must be a plain identifier");
  }

  @Test
  void oneInsertStatementSendsOneNotificationOnTheSchemasChannel() throws Exception {
    OutboxSchema.migrate(db.dataSource(), db.schema());
    try (Connection listener = db.connect();
        Connection writer = db.connect()) {
      try (Statement listen = listener.createStatement()) {
        listen.execute("LISTEN " + OutboxSchema.notifyChannel(db.schema()));
      }
      writer.setAutoCommit(false);
      try (Statement insert = writer.createStatement()) {
        insert.execute(
            "insert into outbox_events (aggregate_type, aggregate_id, event_type, payload)"
                + " select 'order', 'o-' || i, 'order.created', '{}' from generate_series(1, 50) i");
        insert.execute(
            "insert into outbox_events (aggregate_type, aggregate_id, event_type, payload)"
                + " values ('order', 'o-51', 'order.created', '{}')");
      }
      writer.commit();

      List<PGNotification> received = drain(listener.unwrap(PGConnection.class));
      assertThat(received).as("one notification for the transaction's two statements").hasSize(1);
      assertThat(received.get(0).getName()).isEqualTo(OutboxSchema.notifyChannel(db.schema()));
      assertThat(received.get(0).getParameter())
          .as("the payload: the lowest position the transaction wrote")
          .isEqualTo(
              db.dsl()
                  .fetchValue("select min(position) from outbox_events where aggregate_id = 'o-1'")
                  .toString())
          .isEqualTo(db.dsl().fetchValue("select min(position) from outbox_events").toString());

      OutboxSchema.setNotifyTrigger(db.dataSource(), db.schema(), false);
      try (Statement insert = writer.createStatement()) {
        insert.execute(
            "insert into outbox_events (id, aggregate_type, aggregate_id, event_type, payload)"
                + " values ('"
                + UUID.randomUUID()
                + "', 'order', 'o-52', 'order.created', '{}')");
      }
      writer.commit();
      assertThat(drain(listener.unwrap(PGConnection.class))).as("trigger off").isEmpty();
      OutboxSchema.setNotifyTrigger(db.dataSource(), db.schema(), true);
    }
  }

  private static List<PGNotification> drain(PGConnection connection) throws Exception {
    List<PGNotification> all = new ArrayList<>();
    // The first call waits for the commit's notification; later ones only collect stragglers.
    PGNotification[] batch = connection.getNotifications(2000);
    while (batch != null && batch.length > 0) {
      all.addAll(List.of(batch));
      batch = connection.getNotifications(200);
    }
    return all;
  }
}

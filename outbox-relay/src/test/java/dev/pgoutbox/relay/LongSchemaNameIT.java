package dev.pgoutbox.relay;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A schema name of 63 characters, the longest PostgreSQL keeps: writes work (the trigger's channel
 * fits) and a relay is woken up by them (LISTEN names the same channel).
 */
class LongSchemaNameIT {

  @RegisterExtension static final TestSchema db = TestSchema.empty();

  private String schema;

  @BeforeEach
  void createLongSchema() {
    String prefix = "t_long_" + Integer.toHexString(ThreadLocalRandom.current().nextInt(1 << 24));
    schema = prefix + "_" + "x".repeat(63 - prefix.length() - 1);
    assertThat(schema).hasSize(63);
    OutboxSchema.migrate(db.dataSource(), schema);
  }

  @AfterEach
  void dropLongSchema() {
    db.execute("drop schema if exists " + schema + " cascade");
  }

  @Test
  void writesAndWakeUpsWorkWithA63CharacterSchemaName() throws Exception {
    DSLContext dsl =
        DSL.using(db.dataSource(), SQLDialect.POSTGRES, OutboxSchema.jooqSettings(schema));
    EventRows.insert(dsl, "x", 1);

    RecordingPublisher publisher = new RecordingPublisher();
    // Polls once an hour: only a notification can deliver the next event in time.
    OutboxRelay relay =
        OutboxRelay.builder()
            .name("long-schema")
            .dataSource(db.dataSource())
            .schema(schema)
            .publisher(publisher)
            .config(RelayConfig.builder().pollInterval(Duration.ofHours(1)).build())
            .build();
    relay.start();
    try {
      Eventually.await(
          "the first event", Duration.ofSeconds(10), () -> publisher.delivered().size() == 1);
      EventRows.insert(dsl, "x", 2);
      Eventually.await(
          "the event written after start, by notification",
          Duration.ofSeconds(10),
          () -> publisher.delivered().size() == 2);
    } finally {
      relay.close();
    }
    assertThat(dsl.fetchCount(OUTBOX_EVENTS, OUTBOX_EVENTS.PROCESSED_AT.isNull())).isZero();
  }
}

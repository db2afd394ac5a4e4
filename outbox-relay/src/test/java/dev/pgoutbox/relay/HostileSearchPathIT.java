package dev.pgoutbox.relay;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.core.Inbox;
import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.relay.internal.StatsReader;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.relay.testing.ShadowedSearchPath;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A hostile role owns a schema on everybody's {@code search_path}, listed even before pg_catalog,
 * and has planted there a recording copy of every function and operator pgoutbox's SQL could
 * resolve by name (same signatures, and varchar or name variants that match a varchar column or a
 * {@code name} value more exactly than pg_catalog's own: {@code plant-shadows.sql}, about 300 of
 * them). The writer (both insert forms and the notify trigger at commit), a started relay woken by
 * NOTIFY with retries and a dead letter, the relays' stats reader and the inbox then run in
 * sessions with that path, as a superuser (the worst case: a planted function would run with every
 * privilege), and none of the planted objects runs.
 */
class HostileSearchPathIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated(4);

  private static ShadowedSearchPath shadows;
  private static HikariDataSource hostilePathPool;

  @BeforeAll
  static void plantShadows() throws IOException {
    shadows = ShadowedSearchPath.plant(db, "hostile-path", 6);
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
    db.execute("TRUNCATE outbox_events, processed_events");
    shadows.clearHits();
  }

  private static DSLContext hostile() {
    return DSL.using(hostilePathPool, SQLDialect.POSTGRES);
  }

  private static List<String> hits() {
    return shadows.hits();
  }

  @Test
  void theShadowsRunInSessionsWithTheHostilePath() {
    // The control: a host's own unqualified call on a varchar is taken over, so a clean run
    // below means pgoutbox's SQL resolved nothing through the path.
    hostile().resultQuery("select md5(cast('x' as varchar)), cast('a' as varchar) = 'b'").fetch();

    assertThat(hits())
        .anyMatch(hit -> hit.startsWith("md5(character varying)"))
        .anyMatch(hit -> hit.startsWith("=(character varying, character varying)"));
  }

  @Test
  void nothingPlantedRunsInTheWriterTheRelayItsStatsOrTheInbox() throws Exception {
    Outbox serialized = Outbox.builder().schema(db.schema()).build();
    Outbox plain = Outbox.builder().schema(db.schema()).serializeWritersPerAggregate(false).build();
    AtomicBoolean failedOnce = new AtomicBoolean();
    RecordingPublisher publisher =
        new RecordingPublisher()
            .decide(
                m -> {
                  if (m.aggregateId().startsWith("poison")) {
                    return PublishResult.permanent("refused by the broker");
                  }
                  if (m.aggregateId().equals("flaky") && failedOnce.compareAndSet(false, true)) {
                    return PublishResult.retryable("broker busy");
                  }
                  return PublishResult.published();
                });
    try (OutboxRelay relay =
        OutboxRelay.builder()
            .name("hostile-path")
            .dataSource(hostilePathPool)
            .schema(db.schema())
            .publisher(publisher)
            .config(
                RelayConfig.builder()
                    .pollInterval(Duration.ofMillis(200))
                    .exponentialBackoff(Duration.ofMillis(10), 2.0, 0.0, Duration.ofMillis(20))
                    .build())
            .build()) {
      relay.start();
      Eventually.await(
          "the relay LISTENs",
          () -> db.listeningSessions("application_name like 'pgoutbox-relay-hostile-path%'") >= 1);

      hostile()
          .transaction(
              tx -> {
                serialized.append(
                    tx.dsl(), OutboxEvent.of("order", "ok-1", "order.created", Map.of("n", 1)));
                serialized.appendAll(
                    tx.dsl(),
                    List.of(
                        OutboxEvent.of("order", "flaky", "order.created", Map.of("n", 2)),
                        OutboxEvent.of("order", "ok-1", "order.paid", Map.of("n", 3))));
              });
      hostile()
          .transaction(
              tx ->
                  plain.appendAll(
                      tx.dsl(),
                      List.of(
                          OutboxEvent.of("order", "poison-1", "order.created", Map.of()),
                          OutboxEvent.of("order", "poison-2", "order.created", Map.of()))));
      // A plain JDBC connection takes the writer's statement rendered once per shape.
      try (java.sql.Connection connection = hostilePathPool.getConnection()) {
        connection.setAutoCommit(false);
        serialized.append(
            connection, OutboxEvent.of("order", "ok-2", "order.created", Map.of("n", 4)));
        plain.append(connection, OutboxEvent.of("order", "ok-3", "order.created", Map.of("n", 5)));
        connection.commit();
      }

      Eventually.await(
          "every event published or dead",
          () ->
              db.queryLong(
                      "select count(*) from outbox_events"
                          + " where processed_at is null and dead_at is null")
                  == 0);
      assertThat(publisher.published("flaky")).isTrue();
    }

    // The relays' stats reader (OutboxAdmin's reads and writes: AdminHostileSearchPathIT).
    StatsReader stats = StatsReader.on(hostilePathPool, db.schema());
    assertThat(stats.stats().deadLetters()).isEqualTo(2);
    stats.tableStats();
    stats.oldestTransactionAge();

    Inbox inbox = Inbox.builder().schema(db.schema()).build();
    UUID eventId = UUID.randomUUID();
    for (int delivery = 0; delivery < 2; delivery++) {
      hostile().transaction(tx -> inbox.handleOnce(tx.dsl(), "billing", eventId, () -> {}));
    }
    assertThat(inbox.purgeProcessed(hostilePathPool, Duration.ZERO, 100)).isEqualTo(1);

    assertThat(hits()).as("planted functions and operators that ran").isEmpty();
  }
}

package dev.pgoutbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.core.Inbox;
import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.relay.internal.StatsReader;
import dev.pgoutbox.relay.testing.DatabaseErrors;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.PgBouncer;
import dev.pgoutbox.testing.TestDatabase;
import dev.pgoutbox.testing.TestSchema;
import java.sql.Connection;
import java.sql.DriverManager;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * PgBouncer in transaction mode, as the docs promise it works (poll-only relay): every transaction
 * of a client may run on another server session, and two server sessions carry six clients.
 * Writers, a relay, its stats reader and the inbox all go through it; the migrations run on a
 * direct connection, as the docs say.
 */
class PgBouncerIT {

  private static final int WRITERS = 4;
  private static final int AGGREGATES = 8;
  private static final int EVENTS_PER_AGGREGATE = 30;

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static final ObjectMapper JSON = new ObjectMapper();

  private static PgBouncer bouncer;
  private static HikariDataSource pool;

  @BeforeAll
  static void start() {
    bouncer = PgBouncer.transactionMode(TestDatabase.get(), 2);
    pool = bouncer.pool(6, "through-pgbouncer");
  }

  @AfterAll
  static void stop() {
    if (bouncer != null) {
      bouncer.close();
    }
  }

  @BeforeEach
  void empty() {
    db.execute("TRUNCATE outbox_events, processed_events, outbox_relays");
  }

  @Test
  void writersAndARelayThroughTransactionPoolingLoseAndReorderNothing() throws Exception {
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    DSLContext through = DSL.using(pool, SQLDialect.POSTGRES);
    DatabaseErrors databaseErrors = new DatabaseErrors();
    RecordingPublisher publisher = new RecordingPublisher();
    ExecutorService writers = Executors.newFixedThreadPool(WRITERS);
    try (OutboxRelay relay =
        OutboxRelay.builder()
            .name("behind-pgbouncer")
            .dataSource(pool)
            .schema(db.schema())
            .publisher(publisher)
            .listener(databaseErrors)
            .config(
                RelayConfig.builder()
                    .batchSize(10)
                    .pollInterval(Duration.ofMillis(10))
                    .listenForNotifications(false)
                    .build())
            .build()) {
      relay.start();
      // Each writer owns two aggregates and appends their events in order, one transaction each,
      // while the relay claims: many more statements per session than pgjdbc's prepare threshold.
      List<Future<?>> written = new ArrayList<>();
      for (int w = 0; w < WRITERS; w++) {
        int writer = w;
        written.add(
            writers.submit(
                () -> {
                  for (int seq = 1; seq <= EVENTS_PER_AGGREGATE; seq++) {
                    for (int a = writer; a < AGGREGATES; a += WRITERS) {
                      int n = seq;
                      String aggregate = "agg-" + a;
                      through.transaction(
                          tx -> outbox.append(tx.dsl(), EventRows.event(aggregate, n)));
                    }
                  }
                  return null;
                }));
      }
      for (Future<?> writer : written) {
        writer.get(2 * Eventually.DEADLINE.toSeconds(), TimeUnit.SECONDS);
      }
      int total = AGGREGATES * EVENTS_PER_AGGREGATE;
      Eventually.until(
          Eventually.DEADLINE,
          () -> publisher.delivered().size() >= total,
          () ->
              publisher.delivered().size()
                  + " of "
                  + total
                  + " published; database errors: "
                  + databaseErrors.errors()
                  + "; PgBouncer: "
                  + bouncer.log());
      assertThat(relay.stop(Duration.ofSeconds(10))).isTrue();
    } finally {
      writers.shutdownNow();
    }

    assertThat(databaseErrors.errors()).as("database errors through PgBouncer").isEmpty();
    Map<String, List<Integer>> seqs = new HashMap<>();
    for (var message : publisher.delivered()) {
      var payload = JSON.readTree(message.payload());
      seqs.computeIfAbsent(payload.get("aggregate").asText(), k -> new ArrayList<>())
          .add(payload.get("seq").asInt());
    }
    assertThat(seqs).hasSize(AGGREGATES);
    List<Integer> inOrder = new ArrayList<>();
    for (int seq = 1; seq <= EVENTS_PER_AGGREGATE; seq++) {
      inOrder.add(seq);
    }
    seqs.forEach(
        (aggregate, published) ->
            assertThat(published).as("events of %s, as published", aggregate).isEqualTo(inOrder));
    assertThat(db.queryLong("SELECT count(*) FROM outbox_events WHERE processed_at IS NULL"))
        .isZero();
  }

  @Test
  void theStatsReaderAndTheInboxWorkThroughTransactionPooling() throws Exception {
    for (int i = 1; i <= 20; i++) {
      EventRows.insert(db.dsl(), "a", i);
    }
    StatsReader stats = StatsReader.on(pool, db.schema());
    Inbox inbox = Inbox.builder().schema(db.schema()).build();
    DSLContext through = DSL.using(pool, SQLDialect.POSTGRES);
    UUID eventId = UUID.randomUUID();
    int ran = 0;
    // More calls than pgjdbc's prepare threshold (5), each a transaction of its own.
    for (int call = 0; call < 12; call++) {
      assertThat(stats.pendingCount()).isEqualTo(20);
      assertThat(stats.stats().pending()).isEqualTo(20);
      boolean first =
          through.transactionResult(tx -> inbox.handleOnce(tx.dsl(), "billing", eventId, () -> {}));
      ran += first ? 1 : 0;
    }
    assertThat(ran).as("the handler ran once").isEqualTo(1);
  }

  /**
   * Without {@code prepareThreshold=0}, pgjdbc names the claim after five runs and expects it on
   * the same server session. Its next transaction is sent to another one by holding the first:
   * PgBouncer hands out the session released last, so the held transaction gets the relay's.
   */
  @Test
  void withoutPrepareThresholdZeroTheRelaySaysWhatToSet() throws Exception {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(bouncer.jdbcUrl());
    config.setMaximumPoolSize(1);
    config.setPoolName("named-statements-through-pgbouncer");
    try (HikariDataSource namingPool = new HikariDataSource(config);
        OutboxRelay relay =
            OutboxRelay.builder()
                .name("named-statements")
                .dataSource(namingPool)
                .schema(db.schema())
                .publisher(new RecordingPublisher())
                .config(RelayConfig.builder().listenForNotifications(false).build())
                .build()) {
      for (int run = 0; run < 6; run++) {
        assertThat(relay.runOnce()).isZero();
      }
      try (Connection holder =
          DriverManager.getConnection(bouncer.jdbcUrl() + "&prepareThreshold=0")) {
        holder.setAutoCommit(false);
        holder.createStatement().execute("SELECT 1");

        assertThatThrownBy(relay::runOnce)
            .isInstanceOf(OutboxException.class)
            .hasMessageContaining("prepareThreshold=0")
            .hasMessageContaining("PgBouncer");
        holder.rollback();
      }
    }
  }
}

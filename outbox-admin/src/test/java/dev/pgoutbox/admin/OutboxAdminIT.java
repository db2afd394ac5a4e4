package dev.pgoutbox.admin;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgoutbox.relay.OutboxStats;
import dev.pgoutbox.relay.OutboxTableStats;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.io.IOException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;
import org.jooq.Query;
import org.jooq.conf.ParamType;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class OutboxAdminIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private OutboxAdmin admin;

  @BeforeEach
  void setUp() {
    db.execute("truncate outbox_events");
    admin = OutboxAdmin.builder().dataSource(db.dataSource()).schema(db.schema()).build();
  }

  private static void kill(UUID id, String error) {
    db.execute(
        "update outbox_events set dead_at = now(), attempts = 10, last_error = '"
            + error
            + "' where id = '"
            + id
            + "'");
  }

  @Test
  void statsCountPendingDeadAndBlockedAndMeasureTheLag() {
    UUID dead = EventRows.insert(db.dsl(), "a", 1);
    EventRows.insert(db.dsl(), "a", 2);
    UUID backingOff = EventRows.insert(db.dsl(), "b", 1);
    EventRows.insert(db.dsl(), "c", 1);
    UUID done = EventRows.insert(db.dsl(), "d", 1);
    kill(dead, "boom");
    db.execute(
        "update outbox_events set retry_after = now() + interval '1 hour' where id = '"
            + backingOff
            + "'");
    db.execute("update outbox_events set processed_at = now() where id = '" + done + "'");
    db.execute("update outbox_events set created_at = now() - interval '90 seconds'");

    OutboxStats stats = admin.stats();

    assertThat(stats.pending()).isEqualTo(3);
    assertThat(stats.deadLetters()).isEqualTo(1);
    assertThat(stats.blockedAggregates()).isEqualTo(2);
    assertThat(stats.oldestPendingAge()).isBetween(Duration.ofSeconds(89), Duration.ofSeconds(120));
  }

  @Test
  void publishedWithinCountsOnlyEventsPublishedInsideTheWindow() {
    UUID recent = EventRows.insert(db.dsl(), "a", 1);
    UUID old = EventRows.insert(db.dsl(), "b", 1);
    EventRows.insert(db.dsl(), "c", 1);
    db.execute("update outbox_events set processed_at = now() where id = '" + recent + "'");
    db.execute(
        "update outbox_events set processed_at = now() - interval '2 minutes' where id = '"
            + old
            + "'");

    assertThat(admin.publishedWithin(Duration.ofMinutes(1))).isEqualTo(1);
    assertThat(admin.publishedWithin(Duration.ofMinutes(5))).isEqualTo(2);
    assertThatThrownBy(() -> admin.publishedWithin(Duration.ofMinutes(61)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("window must be at most 60 minutes");
    assertThatThrownBy(() -> admin.publishedWithin(Duration.ZERO))
        .hasMessageContaining("window must be positive");
  }

  @Test
  void tableStatsShowTheDeadRowsATransactionHeldOpenKeepsFromVacuum() throws Exception {
    try (Connection holder = db.connect();
        Connection writer = db.connect();
        Statement hold = holder.createStatement();
        Statement write = writer.createStatement()) {
      write.execute(
          "insert into outbox_events (aggregate_type, aggregate_id, event_type, payload)"
              + " select 'order', 'agg-' || i, 'order.step', '{}' from generate_series(1, 300) i");
      holder.setAutoCommit(false);
      hold.execute("select txid_current()"); // a real xid: the horizon stops here
      write.execute("update outbox_events set processed_at = now()");

      // Each vacuum reports the table's live and dead rows as it found them; counts that other
      // backends (the pool's, earlier tests') flush late can change them until the next vacuum.
      OutboxTableStats held =
          vacuumedUntil(write, t -> t.deadTuples() == 300 && t.liveTuples() == 300);
      assertThat(held).as("300 dead rows kept by the open transaction, 300 live").isNotNull();
      assertThat(held.deadTupleRatio()).isEqualTo(0.5);
      assertThat(held.tableBytes()).isPositive();
      assertThat(held.indexBytes()).isPositive();
      assertThat(admin.oldestTransactionAge()).isPositive();

      holder.rollback();
      // Other test classes share the database: their transactions may hold the horizon briefly.
      assertThat(vacuumedUntil(write, t -> t.deadTuples() == 0 && t.liveTuples() == 300))
          .as("the dead rows removed once the transaction ended")
          .isNotNull();
    }
  }

  /**
   * A window of published events leaves the pending indexes large after vacuum has emptied them
   * (the soak's claims stayed 4x slower until they were rebuilt). The rebuild must give the space
   * back, leave both indexes valid, clear the invalid copy an earlier failed rebuild left, and
   * never block a writer: one inserts while the rebuild waits for that writer's own open
   * transaction.
   */
  @Test
  void rebuildingThePendingIndexesGivesTheirSpaceBackWithoutBlockingWriters() throws Exception {
    db.execute(
        "insert into outbox_events (aggregate_type, aggregate_id, event_type, payload)"
            + " select 'order', 'agg-' || (i % 500), 'order.step', '{}'"
            + " from generate_series(1, 20000) i");
    db.execute("update outbox_events set processed_at = now()");
    db.execute("vacuum outbox_events");
    db.execute(
        "insert into outbox_events (aggregate_type, aggregate_id, event_type, payload)"
            + " select 'order', 'late-' || i, 'order.step', '{}' from generate_series(1, 10) i");
    // What a rebuild that failed half way leaves behind: an invalid index named like its copy.
    assertThatThrownBy(
            () ->
                db.execute(
                    "create unique index concurrently outbox_events_pending_idx_ccnew"
                        + " on outbox_events (aggregate_type) where processed_at is null"))
        .hasMessageContaining("could not create unique index");
    long before = admin.tableStats().pendingIndexBytes();
    assertThat(before).as("20,000 published entries' pages").isGreaterThan(400_000);

    AtomicReference<Long> freed = new AtomicReference<>();
    try (Connection writer = db.connect();
        Statement write = writer.createStatement()) {
      writer.setAutoCommit(false);
      write.execute("set local statement_timeout = '10s'");
      write.execute(
          "insert into outbox_events (aggregate_type, aggregate_id, event_type, payload)"
              + " values ('order', 'during-1', 'order.step', '{}')");
      Thread rebuild = Thread.ofPlatform().start(() -> freed.set(admin.rebuildPendingIndexes()));
      db.awaitAnyWaitingForLock("virtualxid");
      write.execute(
          "insert into outbox_events (aggregate_type, aggregate_id, event_type, payload)"
              + " values ('order', 'during-2', 'order.step', '{}')");
      writer.commit();
      rebuild.join(Duration.ofSeconds(30));
      assertThat(rebuild.isAlive()).as("the rebuild finished once the writer committed").isFalse();
    }

    long after = admin.tableStats().pendingIndexBytes();
    assertThat(freed.get()).isEqualTo(before - after);
    assertThat(after).isLessThan(before / 10);
    assertThat(
            db.queryLong(
                "select count(*) from pg_index i join pg_class c on c.oid = i.indexrelid"
                    + " where i.indrelid = 'outbox_events'::regclass"
                    + " and c.relname like 'outbox_events_pending%'"
                    + " and i.indisvalid and i.indisready"))
        .as("both pending indexes valid, the invalid copy gone")
        .isEqualTo(2);
    assertThat(
            db.queryLong(
                "select count(*) from pg_class where relname like 'outbox_events_pending%ccnew%'"
                    + " and relnamespace = (select oid from pg_namespace where nspname = '"
                    + db.schema()
                    + "')"))
        .isZero();
    assertThat(admin.pendingCount()).isEqualTo(12);
  }

  /**
   * Vacuums outbox_events until its statistics satisfy {@code condition}, within 20 s; returns the
   * statistics that did, or null.
   */
  private @Nullable OutboxTableStats vacuumedUntil(
      Statement statement, Predicate<OutboxTableStats> condition) throws InterruptedException {
    AtomicReference<OutboxTableStats> found = new AtomicReference<>();
    Eventually.holdsWithin(
        () -> {
          try {
            statement.execute("vacuum outbox_events");
          } catch (SQLException e) {
            throw new IllegalStateException(e);
          }
          OutboxTableStats table = admin.tableStats();
          if (condition.test(table)) {
            found.set(table);
            return true;
          }
          return false;
        },
        20);
    return found.get();
  }

  /**
   * Every relay reads these counts every metricsRefreshInterval; with a backlog they read every
   * pending row (the soak measured 0.8 s and 1.1 s per refresh at 300,000 pending events).
   */
  @Test
  void deadLetterAndBlockedAggregateCountsReadOnlyFailingEventsNotTheBacklog() {
    db.execute(
        "insert into outbox_events (aggregate_type, aggregate_id, event_type, payload)"
            + " select 'order', 'agg-' || (i % 1000), 'order.step', '{}'"
            + " from generate_series(1, 30000) i");
    kill(EventRows.insert(db.dsl(), "dead", 1), "boom");
    UUID backingOff = EventRows.insert(db.dsl(), "backing-off", 1);
    db.execute(
        "update outbox_events set retry_after = now() + interval '1 hour' where id = '"
            + backingOff
            + "'");
    db.execute("analyze outbox_events");

    assertThat(admin.deadLetterCount()).isEqualTo(1);
    assertThat(admin.blockedAggregates()).isEqualTo(2);
    assertThat(buffersRead(admin.deadLetterCountQuery()))
        .as("buffers the dead-letter count reads")
        .isLessThan(20);
    assertThat(buffersRead(admin.blockedAggregatesQuery()))
        .as("buffers the blocked-aggregate count reads")
        .isLessThan(40);
  }

  /** Shared buffers (hit or read) one run of {@code query} touched, from EXPLAIN ANALYZE. */
  private static long buffersRead(Query query) {
    String plan =
        db.dsl()
            .fetchValue(
                "explain (analyze, buffers, format json) " + query.getSQL(ParamType.INLINED))
            .toString();
    JsonNode top;
    try {
      top = new ObjectMapper().readTree(plan).get(0).get("Plan");
    } catch (IOException e) {
      throw new IllegalStateException(plan, e);
    }
    return top.get("Shared Hit Blocks").asLong() + top.get("Shared Read Blocks").asLong();
  }

  @Test
  void deadLettersArePagedByPosition() {
    for (int i = 0; i < 5; i++) {
      kill(EventRows.insert(db.dsl(), "agg-" + i, 1), "error " + i);
    }
    List<DeadLetter> first = admin.deadLetters(2, 0);
    List<DeadLetter> second = admin.deadLetters(2, first.get(1).position());
    List<DeadLetter> third = admin.deadLetters(2, second.get(1).position());

    assertThat(first).extracting(DeadLetter::lastError).containsExactly("error 0", "error 1");
    assertThat(second).extracting(DeadLetter::lastError).containsExactly("error 2", "error 3");
    assertThat(third).extracting(DeadLetter::lastError).containsExactly("error 4");
    assertThatThrownBy(() -> admin.deadLetters(0, 0))
        .hasMessage("limit must be between 1 and 1000, was 0");
  }

  @Test
  void retryByAggregateAndByEventTypeResetAttemptsAndBackoff() {
    kill(EventRows.insert(db.dsl(), "order", "a", "order.paid", 1), "x");
    kill(EventRows.insert(db.dsl(), "order", "b", "order.paid", 1), "x");
    kill(EventRows.insert(db.dsl(), "order", "c", "order.created", 1), "x");

    assertThat(admin.retryAggregate("order", "a")).isEqualTo(1);
    assertThat(admin.retryEventType("order.paid")).isEqualTo(1);
    assertThat(admin.deadLetterCount()).isEqualTo(1);
    assertThat(
            db.dsl()
                .fetchCount(
                    OUTBOX_EVENTS,
                    OUTBOX_EVENTS
                        .ATTEMPTS
                        .eq(0)
                        .and(OUTBOX_EVENTS.DEAD_AT.isNull())
                        .and(OUTBOX_EVENTS.RETRY_AFTER.isNull())))
        .isEqualTo(2);
    assertThat(admin.retry(UUID.randomUUID())).isFalse();
  }

  /**
   * An event that is merely pending (here one a relay holds mid-attempt, its attempts counted) is
   * no one's to retry. The retry of one id answered true and reset its attempts, which the retries
   * by aggregate and by type never did.
   */
  @Test
  void retryOfAnEventThatIsMerelyPendingAnswersFalseAndChangesNothing() {
    UUID pending = EventRows.insert(db.dsl(), "a", 1);
    db.execute(
        "update outbox_events set attempts = 3, last_error = 'timeout' where id = '"
            + pending
            + "'");
    UUID processed = EventRows.insert(db.dsl(), "b", 1);
    db.execute("update outbox_events set processed_at = now() where id = '" + processed + "'");

    assertThat(admin.retry(pending)).isFalse();
    assertThat(admin.retry(processed)).isFalse();
    assertThat(
            db.queryLong(
                "select count(*) from outbox_events where id = '"
                    + pending
                    + "' and attempts = 3 and last_error = 'timeout'"))
        .as("attempts and error untouched")
        .isOne();
  }

  @Test
  void discardDeletesOnlyDeadLetters() {
    UUID dead = EventRows.insert(db.dsl(), "a", 1);
    UUID alive = EventRows.insert(db.dsl(), "b", 1);
    kill(dead, "x");

    assertThat(admin.discard(alive)).isFalse();
    assertThat(admin.discard(dead)).isTrue();
    assertThat(db.dsl().fetchCount(OUTBOX_EVENTS)).isEqualTo(1);
  }

  @Test
  void retentionPurgesOldProcessedRowsInBatchesAndNothingElse() {
    for (int i = 0; i < 25; i++) {
      EventRows.insert(db.dsl(), "old-" + i, 1);
    }
    db.execute("update outbox_events set processed_at = now() - interval '8 days'");
    EventRows.insert(db.dsl(), "recent", 1);
    db.execute(
        "update outbox_events set processed_at = now() - interval '1 day'"
            + " where aggregate_id = 'recent'");
    EventRows.insert(db.dsl(), "pending", 1);

    assertThat(admin.purgeProcessed(Duration.ofDays(7), 10)).isEqualTo(25);
    assertThat(db.dsl().fetchCount(OUTBOX_EVENTS)).isEqualTo(2);
    assertThatThrownBy(() -> admin.purgeProcessed(Duration.ofDays(7), 0))
        .hasMessage("batchSize must be between 1 and 100000, was 0");
  }

  @Test
  void refusesASchemaThatIsNotAnIdentifier() {
    assertThatThrownBy(
            () -> OutboxAdmin.builder().dataSource(db.dataSource()).schema("x;drop").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("schema must be a plain identifier");
  }
}

package dev.pgoutbox.core;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.jooq.DSLContext;
import org.jooq.ExecuteContext;
import org.jooq.ExecuteListener;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.jooq.impl.DefaultExecuteListenerProvider;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Two transactions writing one aggregate, interleaved step by step: without serialization a
 * later-positioned event can commit first; with it the second writer waits, so positions follow
 * commits. And the documented cost: opposite lock orders deadlock, appendAll's sorted order does
 * not.
 */
class WriterSerializationIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static final ExecutorService executor = Executors.newCachedThreadPool();

  @AfterAll
  static void stop() {
    executor.shutdownNow();
  }

  @BeforeEach
  void empty() {
    db.execute("TRUNCATE outbox_events");
  }

  private static Outbox outbox(boolean serialize) {
    return Outbox.builder().schema(db.schema()).serializeWritersPerAggregate(serialize).build();
  }

  private static OutboxEvent event(String aggregateId, String step) {
    return OutboxEvent.of("order", aggregateId, "order." + step, Map.of("step", step));
  }

  private static Connection begin() throws SQLException {
    Connection connection = db.dataSource().getConnection();
    connection.setAutoCommit(false);
    return connection;
  }

  private static long position(UUID id) {
    return db.queryLong("SELECT position FROM outbox_events WHERE id = '" + id + "'");
  }

  private static long visible(UUID id) {
    return db.queryLong("SELECT count(*) FROM outbox_events WHERE id = '" + id + "'");
  }

  @Test
  void withoutSerializationALaterPositionCanCommitFirst() throws Exception {
    Outbox outbox = outbox(false);
    try (Connection first = begin();
        Connection second = begin()) {
      UUID earlier = outbox.append(first, event("42", "paid"));
      UUID later = outbox.append(second, event("42", "shipped")); // does not wait
      second.commit();

      // What a relay sees now: the later-positioned event alone, so it would publish it first.
      assertThat(visible(later)).isEqualTo(1);
      assertThat(visible(earlier)).isZero();

      first.commit();
      assertThat(position(earlier)).isLessThan(position(later));
    }
  }

  @Test
  void withSerializationTheSecondWriterWaitsUntilTheFirstCommits() throws Exception {
    Outbox outbox = outbox(true);
    try (Connection first = begin();
        Connection second = begin()) {
      int secondPid = TestSchema.backendPid(second);
      UUID firstId = outbox.append(first, event("42", "paid"));

      Future<UUID> secondId = executor.submit(() -> outbox.append(second, event("42", "shipped")));
      db.awaitWaitingForLock(secondPid, "advisory");
      assertThat(secondId).isNotDone();

      first.commit();
      UUID shipped = secondId.get(Eventually.DEADLINE.toSeconds(), TimeUnit.SECONDS);
      second.commit();

      assertThat(position(firstId)).isLessThan(position(shipped));
    }
  }

  @Test
  void theDefaultOutboxSerializesTheWritersOfOneAggregate() throws Exception {
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    assertThat(outbox.serializesWritersPerAggregate()).isTrue();
    try (Connection first = begin();
        Connection second = begin()) {
      int secondPid = TestSchema.backendPid(second);
      UUID firstId = outbox.append(first, event("7", "paid"));

      Future<UUID> secondId = executor.submit(() -> outbox.append(second, event("7", "shipped")));
      db.awaitWaitingForLock(secondPid, "advisory");
      assertThat(secondId).isNotDone();

      first.commit();
      UUID shipped = secondId.get(Eventually.DEADLINE.toSeconds(), TimeUnit.SECONDS);
      second.commit();
      assertThat(position(firstId)).isLessThan(position(shipped));
    }
  }

  @Test
  void theLocksAreTakenInsideTheInsertWithoutAnExtraRoundTrip() throws Exception {
    Outbox outbox = outbox(true);
    List<String> statements = new ArrayList<>();
    try (Connection writer = begin()) {
      int pid = TestSchema.backendPid(writer);
      DSLContext tx =
          DSL.using(writer, SQLDialect.POSTGRES)
              .configuration()
              .derive(
                  new DefaultExecuteListenerProvider(
                      new ExecuteListener() {
                        @Override
                        public void executeStart(ExecuteContext ctx) {
                          statements.add(ctx.sql());
                        }
                      }))
              .dsl();
      outbox.appendAll(tx, List.of(event("b", "paid"), event("a", "paid"), event("b", "shipped")));

      assertThat(statements).hasSize(1);
      assertThat(statements.get(0)).contains("pg_advisory_xact_lock").startsWith("insert");
      assertThat(
              db.queryLong(
                  "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = " + pid))
          .as("one lock per aggregate, held until the end of the transaction")
          .isEqualTo(2);
      writer.rollback();
    }
  }

  @Test
  void serializationOfOneAggregateDoesNotHoldBackAnother() throws Exception {
    Outbox outbox = outbox(true);
    try (Connection first = begin();
        Connection second = begin()) {
      outbox.append(first, event("42", "paid"));

      Future<UUID> other = executor.submit(() -> outbox.append(second, event("43", "paid")));
      assertThat(other.get(Eventually.DEADLINE.toSeconds(), TimeUnit.SECONDS)).isNotNull();
      second.commit();
      first.commit();
    }
    assertThat(Stored.eventCount(db)).isEqualTo(2);
  }

  @Test
  void rollbackReleasesTheAggregateLock() throws Exception {
    Outbox outbox = outbox(true);
    try (Connection first = begin();
        Connection second = begin()) {
      int secondPid = TestSchema.backendPid(second);
      outbox.append(first, event("42", "paid"));
      Future<UUID> waiting = executor.submit(() -> outbox.append(second, event("42", "shipped")));
      db.awaitWaitingForLock(secondPid, "advisory");

      first.rollback();
      UUID shipped = waiting.get(Eventually.DEADLINE.toSeconds(), TimeUnit.SECONDS);
      second.commit();
      assertThat(visible(shipped)).isEqualTo(1);
    }
    assertThat(Stored.eventCount(db)).isEqualTo(1);
  }

  @Test
  void appendingToTwoAggregatesInOppositeOrdersCanDeadlock() throws Exception {
    Outbox outbox = outbox(true);
    try (Connection first = begin();
        Connection second = begin()) {
      fastDeadlockDetection(first);
      fastDeadlockDetection(second);
      int firstPid = TestSchema.backendPid(first);
      outbox.append(first, event("a", "paid"));
      outbox.append(second, event("b", "paid"));

      Future<UUID> firstThenB = executor.submit(() -> outbox.append(first, event("b", "linked")));
      db.awaitWaitingForLock(firstPid, "advisory");
      Future<UUID> secondThenA = executor.submit(() -> outbox.append(second, event("a", "linked")));

      List<Throwable> failures = new ArrayList<>();
      for (Future<UUID> append : List.of(firstThenB, secondThenA)) {
        try {
          append.get(Eventually.DEADLINE.toSeconds(), TimeUnit.SECONDS);
        } catch (ExecutionException e) {
          failures.add(e.getCause());
        }
      }
      // PostgreSQL breaks the cycle by aborting one of the two transactions.
      assertThat(failures).hasSize(1);
      assertThat(failures.get(0))
          .isInstanceOf(OutboxException.class)
          .hasMessageContaining("deadlock detected");
      first.rollback();
      second.rollback();
    }
  }

  @Test
  void appendAllLocksItsAggregatesInSortedOrderSoItCannotHoldOneWhileWaitingForAnother()
      throws Exception {
    Outbox outbox = outbox(true);
    try (Connection first = begin();
        Connection second = begin()) {
      int secondPid = TestSchema.backendPid(second);
      outbox.append(first, event("a", "paid"));

      // Listed b before a, but locked a first: it waits for "a" without holding "b".
      Future<List<UUID>> both =
          executor.submit(
              () -> outbox.appendAll(second, List.of(event("b", "x"), event("a", "x"))));
      db.awaitWaitingForLock(secondPid, "advisory");

      // So the first writer can still take "b": no deadlock.
      Future<UUID> firstTakesB = executor.submit(() -> outbox.append(first, event("b", "y")));
      assertThat(firstTakesB.get(Eventually.DEADLINE.toSeconds(), TimeUnit.SECONDS)).isNotNull();
      first.commit();

      assertThat(both.get(Eventually.DEADLINE.toSeconds(), TimeUnit.SECONDS)).hasSize(2);
      second.commit();
    }
    assertThat(Stored.eventCount(db)).isEqualTo(4);
  }

  @Test
  void hostsCanTakeTheSameDocumentedLockKey() throws Exception {
    Outbox outbox = outbox(true);
    try (Connection host = begin();
        Connection writer = begin();
        Statement statement = host.createStatement()) {
      int writerPid = TestSchema.backendPid(writer);
      statement.execute(
          "SELECT pg_advisory_xact_lock(hashtextextended('order' || ':' || '42', 0))");

      Future<UUID> append = executor.submit(() -> outbox.append(writer, event("42", "paid")));
      db.awaitWaitingForLock(writerPid, "advisory");
      host.commit();
      assertThat(append.get(Eventually.DEADLINE.toSeconds(), TimeUnit.SECONDS)).isNotNull();
      writer.commit();
    }
  }

  private static void fastDeadlockDetection(Connection connection) throws SQLException {
    try (Statement statement = connection.createStatement()) {
      statement.execute("SET LOCAL deadlock_timeout = '50ms'");
    }
  }

  @Test
  void withoutSerializationNoAdvisoryLockIsTaken() throws Exception {
    Outbox outbox = outbox(false);
    try (Connection writer = begin()) {
      int pid = TestSchema.backendPid(writer);
      outbox.append(writer, event("42", "paid"));
      assertThat(
              db.queryLong(
                  "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = " + pid))
          .isZero();
      writer.rollback();
    }
  }
}

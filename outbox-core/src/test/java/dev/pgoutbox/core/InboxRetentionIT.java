package dev.pgoutbox.core;

import static dev.pgoutbox.db.jooq.Tables.PROCESSED_EVENTS;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.ExecuteContext;
import org.jooq.ExecuteListener;
import org.jooq.SQLDialect;
import org.jooq.TransactionContext;
import org.jooq.TransactionListener;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Retention deletes only old inbox rows, in bounded batches, each committed on its own. */
class InboxRetentionIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static Inbox inbox;

  @BeforeAll
  static void build() {
    inbox = Inbox.builder().schema(db.schema()).build();
  }

  @BeforeEach
  void rows() {
    db.execute("TRUNCATE processed_events");
    // 250 rows two days old for two consumers, 30 rows of an hour ago.
    db.execute(
        "INSERT INTO processed_events (consumer, event_id, processed_at)"
            + " SELECT CASE WHEN i % 2 = 0 THEN 'billing' ELSE 'shipping' END,"
            + " gen_random_uuid(), now() - interval '2 days' - i * interval '1 second'"
            + " FROM generate_series(1, 250) i");
    db.execute(
        "INSERT INTO processed_events (consumer, event_id, processed_at)"
            + " SELECT 'billing', gen_random_uuid(), now() - interval '1 hour'"
            + " FROM generate_series(1, 30)");
  }

  private static int oldRows() {
    return db.dsl()
        .fetchCount(
            PROCESSED_EVENTS,
            PROCESSED_EVENTS.PROCESSED_AT.lt(DSL.currentOffsetDateTime().minus(1)));
  }

  @Test
  void purgeDeletesOnlyOldRowsInBatchesEachInItsOwnTransaction() {
    List<Integer> deletedPerStatement = new CopyOnWriteArrayList<>();
    AtomicInteger commits = new AtomicInteger();
    DSLContext dsl =
        DSL.using(db.dataSource(), SQLDialect.POSTGRES)
            .configuration()
            .derive(
                new ExecuteListener() {
                  @Override
                  public void executeEnd(ExecuteContext ctx) {
                    if (ctx.sql().startsWith("delete")) {
                      deletedPerStatement.add(ctx.rows());
                    }
                  }
                })
            .derive(
                new TransactionListener() {
                  @Override
                  public void commitEnd(TransactionContext ctx) {
                    commits.incrementAndGet();
                  }
                })
            .dsl();

    long deleted = inbox.purgeProcessed(dsl, Duration.ofDays(1), 100);

    assertThat(deleted).isEqualTo(250);
    assertThat(deletedPerStatement).containsExactly(100, 100, 50);
    assertThat(commits).hasValue(3);
    assertThat(oldRows()).isZero();
    assertThat(Stored.count(db, "processed_events")).isEqualTo(30);
  }

  @Test
  void purgeWithADataSourceCommitsEveryBatch() {
    AtomicInteger commits = new AtomicInteger();
    DataSource counting = countingCommits(db.dataSource(), commits);

    long deleted = inbox.purgeProcessed(counting, Duration.ofDays(1), 60);

    assertThat(deleted).isEqualTo(250);
    assertThat(commits).hasValue(5); // 60, 60, 60, 60, 10
    assertThat(Stored.count(db, "processed_events")).isEqualTo(30);
  }

  @Test
  void purgeWithAnExactMultipleOfTheBatchSizeStopsAfterAnEmptyBatch() {
    assertThat(inbox.purgeProcessed(db.dataSource(), Duration.ofDays(1), 125)).isEqualTo(250);
    assertThat(inbox.purgeProcessed(db.dataSource(), Duration.ofDays(1), 125)).isZero();
    assertThat(Stored.count(db, "processed_events")).isEqualTo(30);
  }

  @Test
  void purgeSkipsRowsLockedByAnotherTransactionInsteadOfWaiting() throws Exception {
    ExecutorService executor = Executors.newSingleThreadExecutor();
    try (Connection holder = db.dataSource().getConnection();
        Statement statement = holder.createStatement()) {
      holder.setAutoCommit(false);
      statement.execute(
          "SELECT 1 FROM processed_events WHERE processed_at < now() - interval '1 day'"
              + " ORDER BY processed_at LIMIT 1 FOR UPDATE");

      Future<Long> purge =
          executor.submit(() -> inbox.purgeProcessed(db.dataSource(), Duration.ofDays(1), 100));
      assertThat(purge.get(Eventually.DEADLINE.toSeconds(), TimeUnit.SECONDS)).isEqualTo(249);
      holder.rollback();
    } finally {
      executor.shutdownNow();
    }
    assertThat(oldRows()).isEqualTo(1);
  }

  @Test
  void scheduledRetentionPurgesOldRowsOnTheHostsExecutor() throws Exception {
    ScheduledExecutorService executor = Executors.newSingleThreadScheduledExecutor();
    try {
      ScheduledFuture<?> retention =
          inbox.scheduleRetention(
              executor, db.dataSource(), Duration.ofMillis(20), Duration.ofDays(1), 100);
      Eventually.await("the scheduled purge removed the old rows", () -> oldRows() == 0);
      retention.cancel(false);
      assertThat(Stored.count(db, "processed_events")).isEqualTo(30);
    } finally {
      executor.shutdownNow();
    }
  }

  @Test
  void purgeOfZeroAgeDeletesEverything() {
    assertThat(inbox.purgeProcessed(db.dataSource(), Duration.ZERO, 1_000)).isEqualTo(280);
  }

  /** A DataSource whose connections count their commits; the database behind it is real. */
  private static DataSource countingCommits(DataSource real, AtomicInteger commits) {
    return (DataSource)
        Proxy.newProxyInstance(
            InboxRetentionIT.class.getClassLoader(),
            new Class<?>[] {DataSource.class},
            (proxy, method, args) -> {
              Object result = invoke(real, method, args);
              if (method.getName().equals("getConnection")) {
                Connection connection = (Connection) result;
                return Proxy.newProxyInstance(
                    InboxRetentionIT.class.getClassLoader(),
                    new Class<?>[] {Connection.class},
                    (p, m, a) -> {
                      if (m.getName().equals("commit")) {
                        commits.incrementAndGet();
                      }
                      return invoke(connection, m, a);
                    });
              }
              return result;
            });
  }

  private static Object invoke(Object target, java.lang.reflect.Method method, Object[] args)
      throws Throwable {
    try {
      return method.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }
}

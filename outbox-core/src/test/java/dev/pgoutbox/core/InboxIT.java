package dev.pgoutbox.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Each event takes effect once per consumer, however often and however concurrently delivered. */
class InboxIT {

  private static final int DELIVERIES = 8;

  @RegisterExtension static final TestSchema db = TestSchema.migrated(DELIVERIES + 2);

  private static DSLContext consumer;
  private static Inbox inbox;
  private static ExecutorService executor;

  @BeforeAll
  static void setUp() {
    db.execute("CREATE TABLE invoices (event_id uuid NOT NULL, consumer text NOT NULL)");
    consumer = DSL.using(db.dataSource(), SQLDialect.POSTGRES);
    inbox = Inbox.builder().schema(db.schema()).build();
    executor = Executors.newFixedThreadPool(DELIVERIES);
  }

  @AfterAll
  static void stop() {
    executor.shutdownNow();
  }

  @BeforeEach
  void empty() {
    db.execute("TRUNCATE invoices, processed_events");
  }

  private static void invoice(DSLContext tx, UUID eventId, String name) {
    tx.execute("INSERT INTO invoices VALUES (?, ?)", eventId, name);
  }

  @Test
  void oneEventDeliveredConcurrentlyFromEightThreadsRunsTheHandlerOnce() throws Exception {
    UUID eventId = UUID.randomUUID();
    AtomicInteger runs = new AtomicInteger();
    CountDownLatch start = new CountDownLatch(1);
    List<Future<Boolean>> deliveries = new ArrayList<>();
    // The watch has a connection of its own: the deliveries hold theirs while it looks.
    try (Connection watch = db.connect()) {
      for (int i = 0; i < DELIVERIES; i++) {
        deliveries.add(
            executor.submit(
                () -> {
                  start.await();
                  return consumer.transactionResult(
                      tx ->
                          inbox.handleOnce(
                              tx.dsl(),
                              "billing",
                              eventId,
                              () -> {
                                invoice(tx.dsl(), eventId, "billing");
                                // Hold the transaction open until every other delivery is in
                                // flight, blocked by this one's inbox row. Only the first run
                                // waits: a second one means the test failed already.
                                if (runs.incrementAndGet() == 1) {
                                  long pid =
                                      tx.dsl()
                                          .fetchValue(DSL.field("pg_backend_pid()", Long.class));
                                  waitForDeliveriesBlockedBy(
                                      watch, pid, DELIVERIES - 1, deliveries);
                                }
                              }));
                }));
      }
      start.countDown();
      int ran = 0;
      try {
        for (Future<Boolean> delivery : deliveries) {
          // Longer than the first delivery's own wait, so that its diagnosis fails the test.
          if (delivery.get(2 * Eventually.DEADLINE.toSeconds(), TimeUnit.SECONDS)) {
            ran++;
          }
        }
      } finally {
        // A failed run must not leave deliveries writing into the next test's tables.
        for (Future<Boolean> delivery : deliveries) {
          try {
            delivery.get(Eventually.DEADLINE.toSeconds(), TimeUnit.SECONDS);
          } catch (ExecutionException | TimeoutException e) {
            // Reported by the loop above.
          }
        }
      }

      assertThat(ran).isEqualTo(1);
    }
    assertThat(runs).hasValue(1);
    assertThat(Stored.count(db, "invoices")).isEqualTo(1);
    assertThat(Stored.count(db, "processed_events")).isEqualTo(1);
  }

  /**
   * Waits until {@code count} backends are blocked by backend {@code pid} ({@code
   * pg_blocking_pids}, whatever their query text or wait event), looking through {@code watch}.
   * Fails at once, naming the cause, when a delivery ended instead of blocking; on a timeout the
   * message shows every backend of the database and what it waits for.
   */
  private static void waitForDeliveriesBlockedBy(
      Connection watch, long pid, int count, List<Future<Boolean>> deliveries) {
    Eventually.until(
        Eventually.DEADLINE,
        () -> {
          deliveries.stream()
              .filter(Future::isDone)
              .filter(d -> d.state() == Future.State.FAILED)
              .findFirst()
              .ifPresent(
                  d -> {
                    throw new AssertionError(
                        "a delivery failed instead of waiting", d.exceptionNow());
                  });
          return Long.parseLong(
                  query(
                      watch,
                      "SELECT count(*) FROM pg_stat_activity WHERE "
                          + pid
                          + " = ANY (pg_blocking_pids(pid))"))
              >= count;
        },
        () ->
            count
                + " deliveries blocked by backend "
                + pid
                + "; backends of this database: "
                + query(
                    watch,
                    "SELECT string_agg(pid || ' ' || coalesce(state, '?') || ' '"
                        + " || coalesce(wait_event_type || '/' || wait_event, '-')"
                        + " || ' blocked by ' || pg_blocking_pids(pid)::text"
                        + " || ': ' || left(query, 80), '; ')"
                        + " FROM pg_stat_activity WHERE datname = current_database()"
                        + " AND pid <> pg_backend_pid()"));
  }

  private static String query(Connection connection, String sql) {
    try (PreparedStatement statement = connection.prepareStatement(sql);
        var result = statement.executeQuery()) {
      result.next();
      return result.getString(1);
    } catch (SQLException e) {
      throw new IllegalStateException(sql + ": " + e.getMessage(), e);
    }
  }

  @Test
  void throwingHandlerRollsTheInboxRowBackSoRedeliveryRunsItAgain() throws Exception {
    UUID eventId = UUID.randomUUID();
    IOException failure = new IOException("ledger unavailable");

    assertThatThrownBy(
            () ->
                consumer.transaction(
                    tx ->
                        inbox.handleOnce(
                            tx.dsl(),
                            "billing",
                            eventId,
                            () -> {
                              invoice(tx.dsl(), eventId, "billing");
                              throw failure;
                            })))
        .rootCause()
        .isSameAs(failure);
    assertThat(Stored.count(db, "processed_events")).isZero();
    assertThat(Stored.count(db, "invoices")).isZero();

    boolean ranAgain =
        consumer.transactionResult(
            tx ->
                inbox.handleOnce(
                    tx.dsl(), "billing", eventId, () -> invoice(tx.dsl(), eventId, "billing")));
    boolean ranThird =
        consumer.transactionResult(
            tx ->
                inbox.handleOnce(
                    tx.dsl(), "billing", eventId, () -> invoice(tx.dsl(), eventId, "billing")));

    assertThat(ranAgain).isTrue();
    assertThat(ranThird).isFalse();
    assertThat(Stored.count(db, "invoices")).isEqualTo(1);
  }

  @Test
  void handlersExceptionPropagatesUnchangedWithItsCheckedType() throws SQLException {
    UUID eventId = UUID.randomUUID();
    try (Connection connection = db.dataSource().getConnection()) {
      connection.setAutoCommit(false);
      IOException failure = new IOException("disk full");
      assertThatThrownBy(
              () ->
                  inbox.<IOException>handleOnce(
                      connection,
                      "archive",
                      eventId,
                      () -> {
                        throw failure;
                      }))
          .isSameAs(failure);
      connection.rollback();
    }
    assertThat(Stored.count(db, "processed_events")).isZero();
  }

  @Test
  void eachConsumerHandlesTheEventOnce() {
    UUID eventId = UUID.randomUUID();
    List<Boolean> ran = new ArrayList<>();
    for (String name : List.of("billing", "shipping", "billing", "shipping")) {
      ran.add(
          consumer.transactionResult(
              tx ->
                  inbox.handleOnce(
                      tx.dsl(), name, eventId, () -> invoice(tx.dsl(), eventId, name))));
    }
    assertThat(ran).containsExactly(true, true, false, false);
    assertThat(Stored.count(db, "invoices")).isEqualTo(2);
  }

  @Test
  void plainJdbcConsumerHandlesOnceAndCommitsTheHandlersWritesWithTheInboxRow()
      throws SQLException {
    UUID eventId = UUID.randomUUID();
    for (int delivery = 0; delivery < 3; delivery++) {
      try (Connection connection = db.dataSource().getConnection()) {
        connection.setAutoCommit(false);
        inbox.handleOnce(
            connection,
            "mailer",
            eventId,
            () -> {
              try (PreparedStatement insert =
                  connection.prepareStatement("INSERT INTO invoices VALUES (?, 'mailer')")) {
                insert.setObject(1, eventId);
                insert.executeUpdate();
              }
            });
        connection.commit();
      }
    }
    assertThat(Stored.count(db, "invoices")).isEqualTo(1);
    assertThat(Stored.count(db, "processed_events")).isEqualTo(1);
  }

  @Test
  void autoCommitConnectionIsRefusedAndTheHandlerDoesNotRun() throws SQLException {
    AtomicInteger runs = new AtomicInteger();
    try (Connection connection = db.dataSource().getConnection()) {
      connection.setAutoCommit(true);
      assertThatThrownBy(
              () ->
                  inbox.handleOnce(connection, "billing", UUID.randomUUID(), runs::incrementAndGet))
          .isInstanceOf(OutboxException.class)
          .hasMessageContaining("auto-commit mode");
    }
    assertThatThrownBy(
            () -> inbox.handleOnce(consumer, "billing", UUID.randomUUID(), runs::incrementAndGet))
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("auto-commit mode");
    assertThat(runs).hasValue(0);
    assertThat(Stored.count(db, "processed_events")).isZero();
  }

  @Test
  void consumerNameAtTheLimitIsStored() {
    String longest = "c".repeat(Inbox.MAX_CONSUMER_LENGTH);
    boolean ran =
        consumer.transactionResult(
            tx -> inbox.handleOnce(tx.dsl(), longest, UUID.randomUUID(), () -> {}));
    assertThat(ran).isTrue();
    assertThat(Stored.count(db, "processed_events")).isEqualTo(1);
  }
}

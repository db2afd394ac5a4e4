package dev.pgoutbox.relay;

import static dev.pgoutbox.relay.WalTestRelays.config;
import static dev.pgoutbox.relay.WalTestSupport.assertNoneLostOrReordered;
import static dev.pgoutbox.relay.WalTestSupport.delivered;
import static dev.pgoutbox.relay.WalTestSupport.pending;
import static dev.pgoutbox.relay.WalTestSupport.slotExists;
import static dev.pgoutbox.relay.WalTestSupport.terminateReader;
import static dev.pgoutbox.relay.WalTestSupport.urlAs;
import static dev.pgoutbox.relay.WalTestSupport.write;
import static dev.pgoutbox.relay.testing.EventRows.event;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgoutbox.admin.DeadLetter;
import dev.pgoutbox.admin.OutboxAdmin;
import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.core.OutboxTransport;
import dev.pgoutbox.db.OutboxRoles;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.relay.testing.TestWalRelays;
import dev.pgoutbox.relay.wal.WalRelay;
import dev.pgoutbox.testing.DeliveryChecker;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The message transport on a real PostgreSQL with {@code wal_level=logical} (the embedded one
 * unless {@code PGOUTBOX_TEST_LOGICAL_JDBC_URL} names another): writers emit logical decoding
 * messages, the WAL relay publishes them in commit order, parks failures as rows, and refuses to
 * start while any role may emit a message. Each test reads a slot of its own.
 */
class WalMessagesIT {

  @RegisterExtension static final TestSchema db = TestSchema.migratedWithLogicalDecoding(10);

  private static final String PASSWORD = "pgoutbox-wal-messages";

  private static String writerRole;
  private static String hostileRole;

  @RegisterExtension final WalTestRelays relays = new WalTestRelays(db);

  @BeforeAll
  static void takeTheFunctionFromPublic() {
    // Role names are cluster-wide: derive them from this run's unique schema name.
    writerRole = db.schema() + "_msg_writer";
    hostileRole = db.schema() + "_msg_hostile";
    for (String role : List.of(writerRole, hostileRole)) {
      db.execute("CREATE ROLE " + role + " LOGIN PASSWORD '" + PASSWORD + "'");
    }
    OutboxRoles.grantWalMessages(db.dataSource(), db.schema(), writerRole, writerRole);
  }

  @AfterAll
  static void dropRoles() {
    for (String role : new String[] {writerRole, hostileRole}) {
      if (role != null) {
        db.execute("DROP OWNED BY " + role);
        db.execute("DROP ROLE " + role);
      }
    }
  }

  @BeforeEach
  void emptyOutbox() {
    db.execute("truncate outbox_events");
  }

  /**
   * Three transactions write one aggregate on three connections: the one that emitted first commits
   * last, one rolls back, one rolls an event back to a savepoint, and a fourth on another thread
   * waits on a latch to commit between them. Delivered in commit order, the rolled-back event
   * never, nothing left in the table.
   */
  @Test
  void eventsArePublishedInCommitOrderAndARolledBackOneNeverAndNoRowIsWritten() throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    WalRelay relay = messagesRelay("msg_order", publisher, relays.executor());
    relay.start();
    Eventually.await("the reader attached", relay::isReading);
    Outbox outbox = messagesOutbox();
    UUID lastId;
    try (Connection first = db.connect();
        Connection second = db.connect();
        Connection rolledBack = db.connect()) {
      first.setAutoCommit(false);
      second.setAutoCommit(false);
      rolledBack.setAutoCommit(false);
      lastId = outbox.append(first, event("o-1", 3));
      outbox.append(rolledBack, event("o-1", 99));
      java.sql.Savepoint savepoint = second.setSavepoint();
      outbox.append(second, event("o-1", 98));
      second.rollback(savepoint);
      outbox.append(second, event("o-1", 1));
      CountDownLatch emitted = new CountDownLatch(1);
      CountDownLatch mayCommit = new CountDownLatch(1);
      CompletableFuture<Void> other =
          CompletableFuture.runAsync(
              () -> {
                try (Connection third = db.connect()) {
                  third.setAutoCommit(false);
                  outbox.append(third, event("o-1", 2));
                  emitted.countDown();
                  mayCommit.await();
                  third.commit();
                } catch (SQLException | InterruptedException e) {
                  throw new IllegalStateException(e);
                }
              });
      assertThat(emitted.await(20, TimeUnit.SECONDS)).isTrue();
      second.commit();
      rolledBack.rollback();
      mayCommit.countDown();
      other.get(20, TimeUnit.SECONDS);
      first.commit();
    }

    Eventually.await("three published", () -> publisher.delivered().size() == 3);
    assertThat(publisher.deliveredPayloads())
        .extracting(DeliveryChecker::seqOf)
        .containsExactly(1, 2, 3);
    OutboxMessage last = publisher.delivered().get(2);
    assertThat(last.id()).isEqualTo(lastId);
    assertThat(last.aggregateType()).isEqualTo("order");
    assertThat(last.eventType()).isEqualTo("order.step");
    assertThat(last.createdAt()).isBefore(java.time.Instant.now().plusSeconds(1));
    assertThat(db.queryLong("select count(*) from outbox_events")).isZero();
    // A later event shows the relay has read past the rollback without publishing it.
    db.dsl().transaction(tx -> outbox.append(tx.dsl(), event("o-1", 4)));
    Eventually.await("the fourth published", () -> publisher.delivered().size() == 4);
    assertThat(publisher.deliveredPayloads())
        .as("neither the rolled-back transaction's event nor the one rolled back to a savepoint")
        .noneMatch(p -> DeliveryChecker.seqOf(p) == 99 || DeliveryChecker.seqOf(p) == 98);
  }

  /** Many delivered events: every one once, in order, and the table neither holds nor grew. */
  @Test
  void manyDeliveredEventsLeaveTheTableAsItWas() throws Exception {
    long sizeBefore = db.queryLong("select pg_total_relation_size('outbox_events')");
    RecordingPublisher publisher = new RecordingPublisher();
    WalRelay relay = messagesRelay("msg_many", publisher, relays.executor());
    relay.start();
    Eventually.await("the reader attached", relay::isReading);
    Map<String, Integer> written = write(db, messagesOutbox(), 50, 1, 100);

    Eventually.await("all published", () -> publisher.delivered().size() >= 5_000);
    assertNoneLostOrReordered(written, publisher.deliveredPayloads());
    assertThat(db.queryLong("select count(*) from outbox_events")).isZero();
    assertThat(db.queryLong("select pg_total_relation_size('outbox_events')"))
        .isEqualTo(sizeBefore);
  }

  /**
   * A failing publish parks the event as a row (with its commit LSN) and the later events of its
   * aggregate behind it; other aggregates flow; once the broker takes it, the drainer publishes the
   * parked rows in order and the aggregate returns to the stream.
   */
  @Test
  void aFailingPublishParksTheEventAsARowWhileOthersFlow() throws Exception {
    AtomicBoolean refusing = new AtomicBoolean(true);
    RecordingPublisher publisher = refusing("bad", refusing, false);
    WalRelay relay = messagesRelay("msg_parking", publisher, relays.executor());
    relay.start();
    Eventually.await("the reader attached", relay::isReading);
    Outbox outbox = messagesOutbox();
    for (int seq = 1; seq <= 5; seq++) {
      int s = seq;
      db.dsl()
          .transaction(
              tx -> {
                outbox.append(tx.dsl(), event("bad", s));
                outbox.append(tx.dsl(), event("good-1", s));
                outbox.append(tx.dsl(), event("good-2", s));
              });
    }

    Eventually.await("the good aggregates published", () -> delivered(publisher, "good") == 10);
    Eventually.await(
        "every bad event parked",
        () ->
            db.queryLong(
                    "select count(*) from outbox_events where aggregate_id = 'bad' and parked"
                        + " and commit_lsn > 0")
                == 5);
    assertThat(db.queryLong("select count(*) from outbox_events where aggregate_id <> 'bad'"))
        .as("delivered events write no row")
        .isZero();
    assertThat(
            db.queryLong(
                "select count(*) from outbox_events where aggregate_id = 'bad' and attempts > 0"
                    + " and last_error = 'broker says no'"))
        .as("only the head has failed attempts; the rest wait behind it")
        .isOne();
    assertThat(
            db.queryLong(
                "select count(distinct created_at) from outbox_events where aggregate_id = 'bad'"))
        .as("each parked row keeps its writer's transaction time")
        .isEqualTo(5);
    assertThat(delivered(publisher, "bad")).isZero();

    refusing.set(false);
    Eventually.await("the drainer published the parked aggregate", () -> pending(db) == 0);
    db.dsl().transaction(tx -> outbox.append(tx.dsl(), event("bad", 6)));
    Eventually.await("the sixth event published", () -> delivered(publisher, "bad") == 6);
    assertThat(
            publisher.delivered().stream()
                .filter(m -> m.aggregateId().equals("bad"))
                .map(m -> DeliveryChecker.seqOf(m.payload())))
        .containsExactly(1, 2, 3, 4, 5, 6);
    assertThat(db.queryLong("select count(*) from outbox_events where payload->>'seq' = '6'"))
        .as("back on the stream once nothing of it was parked: no row")
        .isZero();
  }

  /** A dead-lettered message event is a dead letter like any other: retried through the admin. */
  @Test
  void aDeadLetteredMessageEventIsRetriedAndDiscardedThroughTheAdmin() throws Exception {
    AtomicBoolean refusing = new AtomicBoolean(true);
    RecordingPublisher publisher = refusing("poison", refusing, true);
    WalRelay relay = messagesRelay("msg_dead", publisher, relays.executor());
    relay.start();
    Eventually.await("the reader attached", relay::isReading);
    Outbox outbox = messagesOutbox();
    UUID first = db.dsl().transactionResult(tx -> outbox.append(tx.dsl(), event("poison", 1)));
    UUID discarded =
        db.dsl().transactionResult(tx -> outbox.append(tx.dsl(), event("poison-2", 1)));
    db.dsl().transaction(tx -> outbox.append(tx.dsl(), event("poison", 2)));
    db.dsl().transaction(tx -> outbox.append(tx.dsl(), event("fine", 1)));

    OutboxAdmin admin =
        OutboxAdmin.builder().dataSource(db.dataSource()).schema(db.schema()).build();
    Eventually.await("two dead letters", () -> admin.deadLetterCount() == 2);
    Eventually.await("the fine aggregate published", () -> delivered(publisher, "fine") == 1);
    assertThat(admin.deadLetters(10, 0).stream().map(DeadLetter::id))
        .containsExactlyInAnyOrder(first, discarded);
    assertThat(delivered(publisher, "poison")).isZero();

    assertThat(admin.discard(discarded)).isTrue();
    refusing.set(false);
    assertThat(admin.retry(first)).isTrue();
    Eventually.await("the retried aggregate published", () -> delivered(publisher, "poison") == 2);
    assertThat(
            publisher.delivered().stream()
                .filter(m -> m.aggregateId().equals("poison"))
                .map(m -> DeliveryChecker.seqOf(m.payload())))
        .containsExactly(1, 2);
    assertThat(publisher.delivered().stream().map(OutboxMessage::id)).doesNotContain(discarded);
    Eventually.await("nothing pending", () -> pending(db) == 0);
  }

  /** The process dies mid-batch; a new relay on the slot publishes everything again, in order. */
  @Test
  void aRelayKilledMidBatchThenRestartedLosesNothing() throws Exception {
    StallingPublisher first = new StallingPublisher(200);
    ScheduledExecutorService firstExecutor = relays.executor();
    WalRelay crashing = messagesRelay("msg_crash", first, firstExecutor);
    crashing.start();
    Eventually.await("the reader attached", crashing::isReading);
    Map<String, Integer> written = write(db, messagesOutbox(), 20, 1, 30);

    Eventually.await("the first reader stalls mid-stream", () -> first.stalled);
    firstExecutor.shutdownNow(); // the process dies: no stop, nothing settled
    terminateReader(db, "msg_crash");

    RecordingPublisher second = new RecordingPublisher();
    WalRelay restarted = messagesRelay("msg_crash", second, relays.executor());
    restarted.start();
    Eventually.await(
        "everything delivered",
        () -> {
          List<String> payloads = new ArrayList<>(first.delegate.deliveredPayloads());
          payloads.addAll(second.deliveredPayloads());
          return DeliveryChecker.check(written, payloads).lost() == 0;
        });
    List<String> payloads = new ArrayList<>(first.delegate.deliveredPayloads());
    payloads.addAll(second.deliveredPayloads());
    DeliveryChecker.Verdict verdict = DeliveryChecker.check(written, payloads);
    assertThat(first.delegate.delivered()).hasSizeLessThan(600);
    assertThat(second.delivered()).isNotEmpty();
    assertThat(verdict.lost()).isZero();
    assertThat(verdict.reordered()).isZero();
    assertThat(db.queryLong("select count(*) from outbox_events")).isZero();
  }

  /**
   * While PUBLIC may execute pg_logical_emit_message any role can forge an event into the stream:
   * the relay refuses to start, naming the function and the fix. After the grants script, a role
   * without the grant cannot emit (either overload), the writer role can (with no privilege on the
   * table at all), and the relay starts and publishes the writer's event only.
   */
  @Test
  void theRelayRefusesToStartWhilePublicMayEmitAndAHostileRoleCannotForgeAfterTheGrants()
      throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    try {
      setPublicExecute(true);
      assertThat(canEmit(hostileRole, "bytea")).as("the hazard: any role may emit").isTrue();
      WalRelay refused = messagesRelay("msg_guard", publisher, relays.executor());
      assertThatThrownBy(refused::start)
          .isInstanceOf(OutboxException.class)
          .hasMessageContaining("refused to start with transport MESSAGES")
          .hasMessageContaining("PUBLIC may execute pg_catalog.pg_logical_emit_message(")
          .hasMessageContaining("REVOKE EXECUTE ON FUNCTION pg_catalog.pg_logical_emit_message(")
          .hasMessageContaining("FROM PUBLIC");
      assertThat(slotExists(db, "msg_guard")).as("nothing created").isFalse();
    } finally {
      OutboxRoles.grantWalMessages(db.dataSource(), db.schema(), writerRole, writerRole);
    }
    assertThat(canEmit(hostileRole, "bytea")).isFalse();
    assertThat(canEmit(hostileRole, "text")).isFalse();

    WalRelay relay = messagesRelay("msg_guard", publisher, relays.executor());
    relay.start();
    Eventually.await("the reader attached", relay::isReading);
    UUID id;
    try (Connection writer = DriverManager.getConnection(urlAs(db, writerRole, PASSWORD))) {
      writer.setAutoCommit(false);
      id = messagesOutbox().append(writer, event("w-1", 1));
      writer.commit();
    }
    Eventually.await("the writer's event published", () -> publisher.delivered().size() == 1);
    assertThat(publisher.delivered().get(0).id()).isEqualTo(id);
  }

  /** A relay on the rows transport never asks for messages: the writers must switch after it. */
  @Test
  void theTransportIsNamedInTheWritersErrorAndToString() {
    Outbox outbox = messagesOutbox();
    assertThat(outbox.transport()).isEqualTo(OutboxTransport.MESSAGES);
    assertThat(outbox.toString()).contains("transport=MESSAGES");
    assertThatThrownBy(
            () -> {
              try (Connection hostile =
                  DriverManager.getConnection(urlAs(db, hostileRole, PASSWORD))) {
                hostile.setAutoCommit(false);
                outbox.append(hostile, event("h-1", 1));
              }
            })
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("as logical decoding messages pgoutbox:" + db.schema())
        .hasMessageContaining("permission denied");
  }

  /** A relay of the message transport on {@code slot}, stopped and its slot dropped after. */
  private WalRelay messagesRelay(
      String slot, Publisher publisher, ScheduledExecutorService executor) {
    relays.dropAfterwards(slot);
    return relays.stopAfterwards(
        TestWalRelays.builder(db, slot, publisher)
            .transport(OutboxTransport.MESSAGES)
            .config(config().build())
            .executor(executor)
            .build());
  }

  private static Outbox messagesOutbox() {
    return Outbox.builder().schema(db.schema()).transport(OutboxTransport.MESSAGES).build();
  }

  private static RecordingPublisher refusing(
      String aggregate, AtomicBoolean refusing, boolean permanent) {
    return new RecordingPublisher()
        .decide(
            m ->
                m.aggregateId().startsWith(aggregate) && refusing.get()
                    ? (permanent
                        ? PublishResult.permanent("broker says never")
                        : PublishResult.retryable("broker says no"))
                    : PublishResult.published());
  }

  private static void setPublicExecute(boolean grant) {
    db.execute(
        "DO $$ DECLARE f regprocedure; BEGIN FOR f IN SELECT p.oid::regprocedure FROM pg_proc p"
            + " WHERE p.proname = 'pg_logical_emit_message' AND p.pronamespace = 'pg_catalog'::regnamespace"
            + " LOOP EXECUTE format('"
            + (grant ? "GRANT" : "REVOKE")
            + " EXECUTE ON FUNCTION %s "
            + (grant ? "TO" : "FROM")
            + " PUBLIC', f); END LOOP; END $$");
  }

  /** Whether {@code role} may emit a message with this outbox's prefix ({@code content} type). */
  private static boolean canEmit(String role, String content) throws SQLException {
    try (Connection c = DriverManager.getConnection(urlAs(db, role, PASSWORD));
        PreparedStatement ps =
            c.prepareStatement(
                "select pg_catalog.pg_logical_emit_message(true, ?, cast('forged' as "
                    + content
                    + "))")) {
      ps.setString(1, OutboxTransport.messagePrefix(db.schema()));
      ps.execute();
      return true;
    } catch (SQLException e) {
      if ("42501".equals(e.getSQLState())) {
        return false;
      }
      throw e;
    }
  }
}

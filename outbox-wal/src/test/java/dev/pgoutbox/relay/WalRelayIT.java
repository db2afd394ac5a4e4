package dev.pgoutbox.relay;

import static dev.pgoutbox.relay.WalTestRelays.config;
import static dev.pgoutbox.relay.WalTestSupport.assertNoneLostOrReordered;
import static dev.pgoutbox.relay.WalTestSupport.delivered;
import static dev.pgoutbox.relay.WalTestSupport.pending;
import static dev.pgoutbox.relay.WalTestSupport.slotExists;
import static dev.pgoutbox.relay.WalTestSupport.slotStatsInto;
import static dev.pgoutbox.relay.WalTestSupport.terminateReader;
import static dev.pgoutbox.relay.WalTestSupport.write;
import static dev.pgoutbox.relay.testing.EventRows.event;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgoutbox.admin.OutboxAdmin;
import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.relay.testing.DatabaseErrors;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.relay.wal.WalRelay;
import dev.pgoutbox.testing.DeliveryChecker;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TcpProxy;
import dev.pgoutbox.testing.TestSchema;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The WAL relay on a real PostgreSQL with {@code wal_level=logical} (the embedded one unless {@code
 * PGOUTBOX_TEST_LOGICAL_JDBC_URL} names another): commit order, crashes, parking, fail-over and the
 * fall-back when the slot is lost. Each test reads a slot of its own.
 */
class WalRelayIT {

  @RegisterExtension static final TestSchema db = TestSchema.migratedWithLogicalDecoding(10);

  @RegisterExtension final WalTestRelays relays = new WalTestRelays(db);

  @BeforeEach
  void emptyOutbox() {
    db.execute("truncate outbox_events");
  }

  /**
   * One transaction of 12 events of 200 KB: the reader ends a batch once it holds the byte budget
   * (the row that reaches it included), where it held all 12 before; every event once, in order.
   */
  @Test
  void theReadersBatchesEndAtTheByteBudget() throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    int budget = 500_000;
    WalRelay relay = relays.relay("byte_budget", publisher, config().maxBatchBytes(budget).build());
    relay.start();
    Eventually.await("the reader attached", relay::isReading);
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    String blob = "x".repeat(200_000);
    try (Connection tx = db.connect()) {
      tx.setAutoCommit(false);
      for (int seq = 1; seq <= 12; seq++) {
        outbox.append(
            tx,
            OutboxEvent.of(
                "big", "b-1", "blob.written", java.util.Map.of("seq", seq, "blob", blob)));
      }
      tx.commit();
    }

    Eventually.await("all published", () -> publisher.delivered().size() == 12);
    assertThat(publisher.deliveredPayloads())
        .extracting(DeliveryChecker::seqOf)
        .containsExactly(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12);
    assertThat(publisher.batches().stream().map(List::size).toList())
        .as("events per batch")
        .hasSizeGreaterThan(1);
    for (List<OutboxMessage> batch : publisher.batches()) {
      long bytes = 0;
      for (OutboxMessage m : batch.subList(0, batch.size() - 1)) {
        bytes += m.payload().length();
      }
      assertThat(bytes).as("the batch before its last row, within the budget").isLessThan(budget);
    }
    Eventually.await("all completed", () -> pending(db) == 0);
  }

  /**
   * The WAL relay deletes what it delivered unless told to mark: a host that wants the history of
   * delivered events (the admin's queries, retention by age) sets MARK_PROCESSED.
   */
  @Test
  void deletesDeliveredRowsByDefaultAndMarksThemWhenAsked() throws Exception {
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    RecordingPublisher deleting = new RecordingPublisher();
    WalRelay relay = relays.relay("deleting", deleting, config().build());
    relay.start();
    Eventually.await("the reader attached", relay::isReading);
    db.dsl().transaction(tx -> outbox.append(tx.dsl(), event("d-1", 1)));
    Eventually.await("published", () -> deleting.delivered().size() == 1);
    Eventually.await("deleted", () -> db.queryLong("select count(*) from outbox_events") == 0);
    relay.stop(Duration.ofSeconds(10));

    RecordingPublisher marking = new RecordingPublisher();
    WalRelay marker =
        relays.relay("marking", marking, config().completion(Completion.MARK_PROCESSED).build());
    marker.start();
    Eventually.await("the reader attached", marker::isReading);
    db.dsl().transaction(tx -> outbox.append(tx.dsl(), event("m-1", 1)));
    Eventually.await("published", () -> marking.delivered().size() == 1);
    Eventually.await(
        "marked, kept",
        () ->
            db.queryLong(
                    "select count(*) from outbox_events where aggregate_id = 'm-1'"
                        + " and processed_at is not null")
                == 1);
    assertThat(pending(db)).isZero();
  }

  @Test
  void commitOrderBeatsPositionOrder() throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    WalRelay relay = relays.relay("commit_order", publisher, config().build());
    relay.start();
    Eventually.await("the reader attached", relay::isReading);
    Outbox outbox =
        Outbox.builder().schema(db.schema()).serializeWritersPerAggregate(false).build();

    try (Connection first = db.connect();
        Connection second = db.connect()) {
      first.setAutoCommit(false);
      second.setAutoCommit(false);
      // The first writer inserts first (the lower position) but commits last.
      outbox.append(first, event("o-1", 2));
      outbox.append(second, event("o-1", 1));
      second.commit();
      first.commit();
    }

    Eventually.await("both published", () -> publisher.delivered().size() == 2);
    assertThat(publisher.deliveredPayloads())
        .extracting(DeliveryChecker::seqOf)
        .containsExactly(1, 2);
    List<Long> positions = publisher.delivered().stream().map(OutboxMessage::position).toList();
    assertThat(positions.get(0))
        .as("delivered first, inserted last")
        .isGreaterThan(positions.get(1));
    // Failed now and then (published, never completed, nothing logged) until the completer waited
    // for the writers to be visible: aRowIsCompletedOnlyOnceItsWriterIsVisible... Should it fail
    // again, the message says where the rows, the relay's sessions and its threads stood.
    Eventually.until(
        Eventually.DEADLINE, () -> pending(db) == 0, () -> "both completed; " + completionState());
  }

  /**
   * The stream sends a transaction once its commit record is on disk; other sessions see it a
   * moment later (here: while its commit waits for a synchronous standby that never answers, which
   * keeps that moment open). A completion taken in between matched nothing and left the published
   * row pending for good; the completer now waits for the writer first. Found by this class's own
   * tests under load: one of two rows stayed pending, nothing logged.
   */
  @Test
  void aRowIsCompletedOnlyOnceItsWriterIsVisibleThoughTheStreamSentItEarlier() throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    // The relay's own commits must not wait for the absent standby.
    WalRelay relay = relays.relay("visible", publisher, config().synchronousCommit(false).build());
    relay.start();
    Eventually.await("the reader attached", relay::isReading);
    CompletableFuture<Void> commit;
    try {
      commit = commitWaitingForAnAbsentStandby(event("v-1", 1));
      Eventually.await("published from the stream", () -> publisher.delivered().size() == 1);
      awaitARelaySessionWaitingForTheWriter();
      assertThat(commit).as("the writer still waits for the standby").isNotDone();
    } finally {
      releaseCommitsWaitingForTheStandby();
    }
    commit.get(20, TimeUnit.SECONDS);
    Eventually.until(
        Eventually.DEADLINE,
        () -> pending(db) == 0,
        () -> "the row completed once visible; " + completionState());
    assertThat(db.queryLong("select count(*) from outbox_events"))
        .as("completed by the default completion: deleted")
        .isZero();
  }

  /**
   * The same moment for a row whose publishing fails: parking it by position matched nothing, so it
   * was neither parked nor retried, and stayed pending for good while its aggregate's later events
   * flowed. The reader now parks it once its writer is visible, and the drainer retries it.
   */
  @Test
  void aFailedRowIsParkedOnlyOnceItsWriterIsVisibleAndThenRetried() throws Exception {
    AtomicBoolean refusing = new AtomicBoolean(true);
    RecordingPublisher publisher = refusingAggregateBad(refusing);
    WalRelay relay =
        relays.relay("visible_park", publisher, config().synchronousCommit(false).build());
    relay.start();
    Eventually.await("the reader attached", relay::isReading);
    CompletableFuture<Void> commit;
    try {
      commit = commitWaitingForAnAbsentStandby(event("bad", 1));
      Eventually.await("refused from the stream", () -> publisher.batches().size() == 1);
      awaitARelaySessionWaitingForTheWriter();
    } finally {
      releaseCommitsWaitingForTheStandby();
    }
    commit.get(20, TimeUnit.SECONDS);
    Eventually.until(
        Eventually.DEADLINE,
        () -> db.queryLong("select count(*) from outbox_events where parked and attempts = 1") == 1,
        () -> "the failed row parked; " + completionState());
    refusing.set(false);
    Eventually.until(
        Eventually.DEADLINE,
        () -> pending(db) == 0,
        () -> "the drainer published the parked row; " + completionState());
    assertThat(publisher.batches()).as("refused once, then published").hasSize(2);
    assertThat(publisher.delivered()).hasSize(1);
  }

  /**
   * Commits {@code event} in a session of its own while new sessions wait for a synchronous standby
   * that never answers: the commit is on disk (the stream sends it) but not yet visible to other
   * sessions, until {@link #releaseCommitsWaitingForTheStandby}.
   */
  private static CompletableFuture<Void> commitWaitingForAnAbsentStandby(OutboxEvent event) {
    db.execute("alter system set synchronous_standby_names = 'pgoutbox_absent_standby'");
    db.execute("select pg_reload_conf()");
    Eventually.await(
        "new sessions wait for the absent standby",
        () -> "pgoutbox_absent_standby".equals(db.queryString("show synchronous_standby_names")));
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    return CompletableFuture.runAsync(
        () -> {
          try (Connection writer = db.connect()) {
            writer.setAutoCommit(false);
            outbox.append(writer, event);
            writer.commit(); // returns once the standby wait ends
          } catch (SQLException e) {
            throw new IllegalStateException(e);
          }
        });
  }

  private static void releaseCommitsWaitingForTheStandby() {
    db.execute("alter system reset synchronous_standby_names");
    db.execute("select pg_reload_conf()");
  }

  /** A relay session looks, again and again, whether the writer is visible yet. */
  private static void awaitARelaySessionWaitingForTheWriter() {
    Eventually.await(
        "a relay session waits for the writer",
        () ->
            db.queryLong(
                    "select count(*) from pg_stat_activity where query like '%pg_xact_status%'"
                        + " and pid <> pg_backend_pid()")
                > 0);
  }

  /** The outbox rows and the relay's sessions, for a failed wait for completion. */
  private static String completionState() {
    return "rows "
        + db.dsl()
            .fetch(
                "select position, processed_at is not null as done, parked, attempts"
                    + " from outbox_events order by position")
            .formatCSV(false)
            .replace('\n', ' ')
        + "; sessions "
        + db.dsl()
            .fetch(
                "select pid, application_name, state, wait_event_type, wait_event,"
                    + " left(query, 60) from pg_stat_activity"
                    + " where datname = current_database() and pid <> pg_backend_pid()")
            .formatCSV(false)
            .replace('\n', ' ')
        + "; relay threads "
        + relayThreads();
  }

  /** Where every thread running pgoutbox code stands (the reader, completer, drainer tasks). */
  private static String relayThreads() {
    StringBuilder dump = new StringBuilder();
    Thread.getAllStackTraces()
        .forEach(
            (thread, frames) -> {
              List<StackTraceElement> ours =
                  Arrays.stream(frames)
                      .filter(f -> f.getClassName().startsWith("dev.pgoutbox.relay"))
                      .toList();
              if (!ours.isEmpty()) {
                dump.append("\n  ")
                    .append(thread.getName())
                    .append(" ")
                    .append(thread.getState())
                    .append(" at ")
                    .append(frames[0])
                    .append(" in ")
                    .append(ours.subList(0, Math.min(6, ours.size())));
              }
            });
    return dump.toString();
  }

  /**
   * A nested transaction rolled back to its savepoint (Spring's {@code PROPAGATION_NESTED}) while
   * the outer one commits: the slot streams the outer transaction's inserts only, so the events of
   * the rolled-back subtransaction never reach the publisher, and the ones after it keep their
   * order.
   */
  @Test
  void anEventRolledBackToASavepointIsNeverPublished() throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    WalRelay relay = relays.relay("savepoint", publisher, config().build());
    relay.start();
    Eventually.await("the reader attached", relay::isReading);
    Outbox outbox = Outbox.builder().schema(db.schema()).build();

    try (Connection connection = db.connect()) {
      connection.setAutoCommit(false);
      outbox.append(connection, event("o-1", 1));
      Savepoint nested = connection.setSavepoint();
      outbox.append(connection, event("o-1", 99));
      outbox.append(connection, event("o-2", 99));
      connection.rollback(nested);
      outbox.append(connection, event("o-1", 2));
      connection.commit();
    }

    // Failed now and then for the same reason as commitOrderBeatsPositionOrder. Should it fail
    // again, the message says what was delivered, the rows, the sessions and the threads.
    Eventually.until(
        Eventually.DEADLINE,
        () -> pending(db) == 0,
        () ->
            "the committed events completed; delivered "
                + publisher.deliveredPayloads()
                + "; "
                + completionState());
    assertThat(publisher.deliveredPayloads())
        .extracting(DeliveryChecker::seqOf)
        .containsExactly(1, 2);
    assertThat(db.queryLong("select count(*) from outbox_events"))
        .as("both completed by the default completion, deleted; nothing else left")
        .isZero();
  }

  /**
   * The completer held up (the first published row locked by another session, as a slow disk or an
   * admin statement holds it) while one-event transactions keep coming, each read as a batch of its
   * own: the reader goes on publishing well past 64 of them, since what it may leave to the
   * completer is 64 full batches' worth of rows (6,400 here), not 64 batches; once the lock goes,
   * every row is completed. Bounded by batches, the reader stopped at the 65th and the events
   * behind it waited for the lock.
   */
  @Test
  void aHeldUpCompletionDoesNotStopTheReaderWhileItsBacklogOfRowsIsSmall() throws Exception {
    int events = 100;
    try (Connection locker = db.connect()) {
      locker.setAutoCommit(false);
      List<OutboxMessage> delivered = new CopyOnWriteArrayList<>();
      Publisher lockingTheFirstRow =
          batch -> {
            if (delivered.isEmpty()) {
              lockRow(locker, batch.get(0).position());
            }
            delivered.addAll(batch);
            return CompletableFuture.completedFuture(
                batch.stream().map(m -> PublishResult.published()).toList());
          };
      WalRelay relay = relays.relay("held_completion", lockingTheFirstRow, config().build());
      relay.start();
      Eventually.await("the reader attached", relay::isReading);
      Outbox outbox = Outbox.builder().schema(db.schema()).build();

      for (int seq = 1; seq <= events; seq++) {
        int written = seq;
        db.dsl().transaction(tx -> outbox.append(tx.dsl(), event("held", written)));
        Eventually.await(
            "event " + written + " published while the completion waits",
            () -> delivered.size() == written);
        if (seq == 1) {
          Eventually.await("the completer waits for the locked row", () -> lockWaiters() == 1);
        }
      }
      assertThat(pending(db))
          .as("nothing completed while the first row is locked")
          .isEqualTo(events);

      locker.rollback();
      Eventually.await("every row completed", () -> pending(db) == 0);
      assertThat(delivered)
          .extracting(m -> DeliveryChecker.seqOf(m.payload()))
          .containsExactlyElementsOf(IntStream.rangeClosed(1, events).boxed().toList());
    }
  }

  private static void lockRow(Connection locker, long position) {
    try (PreparedStatement ps =
        locker.prepareStatement("select 1 from outbox_events where position = ? for update")) {
      ps.setLong(1, position);
      ps.executeQuery().close();
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void aReaderThatCrashesMidStreamLosesNothing() throws Exception {
    StallingPublisher first = new StallingPublisher(200);
    ScheduledExecutorService firstExecutor = relays.executor();
    WalRelay crashing = relays.relay("crash", first, config().build(), firstExecutor);
    crashing.start();
    Eventually.await("the reader attached", crashing::isReading);
    Map<String, Integer> written = write(db, 20, 1, 30);

    Eventually.await("the first reader stalls mid-stream", () -> first.stalled);
    firstExecutor.shutdownNow(); // the process dies: no stop, no completion of what it published
    terminateReader(db, "crash");

    RecordingPublisher second = new RecordingPublisher();
    WalRelay restarted = relays.relay("crash", second, config().build());
    restarted.start();
    Eventually.await("everything completed", () -> pending(db) == 0);

    List<String> payloads = new ArrayList<>(first.delegate.deliveredPayloads());
    payloads.addAll(second.deliveredPayloads());
    DeliveryChecker.Verdict verdict = DeliveryChecker.check(written, payloads);
    assertThat(first.delegate.delivered()).hasSizeLessThan(600);
    assertThat(second.delivered()).isNotEmpty();
    assertThat(verdict.lost()).isZero();
    assertThat(verdict.reordered()).isZero();
  }

  @Test
  void aFailingAggregateParksAndDrainsThroughTheTableRelayWhileOthersFlow() throws Exception {
    AtomicBoolean brokerRefusesBad = new AtomicBoolean(true);
    RecordingPublisher publisher = refusingAggregateBad(brokerRefusesBad);
    WalRelay relay = relays.relay("parking", publisher, config().build());
    relay.start();
    Eventually.await("the reader attached", relay::isReading);
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
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
            db.queryLong("select count(*) from outbox_events where aggregate_id = 'bad' and parked")
                == 5);
    assertThat(delivered(publisher, "bad")).isZero();
    assertThat(
            db.queryLong(
                "select count(*) from outbox_events where aggregate_id = 'bad' and attempts > 0"
                    + " and last_error = 'broker says no'"))
        .as("only the head has failed attempts; the rest wait behind it")
        .isOne();

    brokerRefusesBad.set(false);
    Eventually.await("the table relay drained the parked aggregate", () -> pending(db) == 0);
    db.dsl().transaction(tx -> outbox.append(tx.dsl(), event("bad", 6)));
    Eventually.await("the sixth event published", () -> delivered(publisher, "bad") == 6);

    assertThat(
            publisher.delivered().stream()
                .filter(m -> m.aggregateId().equals("bad"))
                .map(m -> DeliveryChecker.seqOf(m.payload())))
        .containsExactly(1, 2, 3, 4, 5, 6);
    Eventually.await("all completed", () -> pending(db) == 0);
    assertThat(
            db.queryLong(
                "select count(*) from outbox_events where aggregate_id = 'bad'"
                    + " and payload->>'seq' = '6' and parked"))
        .as("back on the fast path once nothing of it was parked")
        .isZero();
  }

  /**
   * Rows written by hand (a restore, a data fix, a copy from another database) keep the table
   * relay's rules in WAL mode: a processed row is never sent, a dead one is a dead letter that
   * holds its aggregate, one not yet due waits with its aggregate behind it, one flagged parked is
   * the drainer's alone. The reader used to publish every insert it streamed.
   */
  @Test
  void handWrittenRowsKeepTheTableRelaysRules() throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    WalRelay relay = relays.relay("odd_rows", publisher, config().build());
    relay.start();
    Eventually.await("the reader attached", relay::isReading);

    db.execute(
        "insert into outbox_events (id, aggregate_type, aggregate_id, event_type, payload,"
            + " attempts, last_error, processed_at, dead_at, retry_after, parked) values"
            + " (gen_random_uuid(), 'order', 'done', 'order.step', '{\"seq\": 1}', 0, null,"
            + "  now(), null, null, false),"
            + " (gen_random_uuid(), 'order', 'dead', 'order.step', '{\"seq\": 1}', 10,"
            + "  'refused for good', null, now(), null, false),"
            + " (gen_random_uuid(), 'order', 'dead', 'order.step', '{\"seq\": 2}', 0, null,"
            + "  null, null, null, false),"
            + " (gen_random_uuid(), 'order', 'later', 'order.step', '{\"seq\": 1}', 1, 'busy',"
            + "  null, null, now() + interval '1 hour', false),"
            + " (gen_random_uuid(), 'order', 'later', 'order.step', '{\"seq\": 2}', 0, null,"
            + "  null, null, null, false),"
            + " (gen_random_uuid(), 'order', 'parked', 'order.step', '{\"seq\": 1}', 0, null,"
            + "  null, null, null, true),"
            + " (gen_random_uuid(), 'order', 'plain', 'order.step', '{\"seq\": 1}', 0, null,"
            + "  null, null, null, false)");
    // Written after them: once it is out, the reader has streamed every row above.
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    db.dsl().transaction(tx -> outbox.append(tx.dsl(), event("after", 1)));

    Eventually.await(
        "the later event published", () -> relay.isReading() && delivered(publisher, "after") == 1);
    // The drainer's claim that publishes the parked row also weighs the dead and the later heads.
    Eventually.await(
        "the parked row published and completed (deleted, the default completion)",
        () ->
            db.queryLong("select count(*) from outbox_events where aggregate_id = 'parked'") == 0);

    assertThat(publisher.delivered())
        .extracting(OutboxMessage::aggregateId)
        .containsExactlyInAnyOrder("plain", "parked", "after");
    assertThat(
            db.queryLong(
                "select count(*) from outbox_events where aggregate_id in ('dead', 'later')"
                    + " and processed_at is null and parked"))
        .as("the dead and the not-yet-due aggregates are the drainer's, held")
        .isEqualTo(4);
    assertThat(db.queryLong("select count(*) from outbox_dead_letters where aggregate_id = 'dead'"))
        .isOne();
  }

  /**
   * A write transaction cut off by a network partition stays open on the server with its row locks
   * until TCP gives up. In the chaos run a reader replayed the same failures into such locks, timed
   * out and attached again, for minutes. Every transaction the WAL relay writes in must let
   * PostgreSQL end it: a trigger records the settings each of them ran with.
   */
  @Test
  void everyWriteTransactionOfTheWalRelayEndsItselfWhenItsConnectionIsLost() throws Exception {
    try {
      AtomicBoolean brokerRefusesBad = new AtomicBoolean(true);
      RecordingPublisher publisher = refusingAggregateBad(brokerRefusesBad);
      WalRelay relay = relays.relay("write_settings", publisher, config().build());
      relay.start();
      Eventually.await("the reader attached", relay::isReading);
      // From here on: creating the slot parks the backlog in one autocommit statement, which
      // leaves no transaction open whatever happens to its connection.
      String table = db.schema() + ".wal_write_settings";
      db.execute(
          "create table "
              + table
              + " (op text, app text, idle text, lock text);"
              + " create function record_wal_write_settings() returns trigger language plpgsql as $$"
              + " begin insert into "
              + table
              + " values (tg_op, current_setting('application_name'),"
              + " current_setting('idle_in_transaction_session_timeout'),"
              + " current_setting('lock_timeout'));"
              + " return null; end $$;"
              + " create trigger record_wal_write_settings after update or delete on outbox_events"
              + " for each statement execute function record_wal_write_settings()");
      Map<String, Integer> written = write(db, 3, 1, 2);
      Outbox outbox = Outbox.builder().schema(db.schema()).build();
      db.dsl().transaction(tx -> outbox.append(tx.dsl(), event("bad", 1)));
      Eventually.await(
          "the bad event parked",
          () -> db.queryLong("select count(*) from outbox_events where parked") == 1);
      brokerRefusesBad.set(false);
      Eventually.await("everything completed", () -> pending(db) == 0);
      written.put("bad", 1);
      DeliveryChecker.Verdict verdict =
          DeliveryChecker.check(written, publisher.deliveredPayloads());
      assertThat(verdict.lost()).isZero();

      assertThat(db.queryLong("select count(*) from wal_write_settings"))
          .as("parking, completing and the drainer's claim all wrote")
          .isGreaterThanOrEqualTo(3);
      assertThat(
              db.queryString(
                  "select coalesce(string_agg(op || ' by ' || app, ', '), 'none')"
                      + " from wal_write_settings where idle = '0' or lock = '0'"))
          .as("write transactions PostgreSQL would keep open forever once their client is gone")
          .isEqualTo("none");
    } finally {
      db.execute(
          "drop trigger if exists record_wal_write_settings on outbox_events;"
              + " drop function if exists record_wal_write_settings();"
              + " drop table if exists wal_write_settings");
    }
  }

  @Test
  void aStandbyTakesOverWhenTheActiveReaderDies() throws Exception {
    RecordingPublisher first = new RecordingPublisher();
    RecordingPublisher second = new RecordingPublisher();
    ScheduledExecutorService firstExecutor = relays.executor();
    WalRelay active = relays.relay("failover", first, config().build(), firstExecutor);
    active.start();
    Eventually.await("the first instance reads", active::isReading);
    WalRelay standby = relays.relay("failover", second, config().build());
    standby.start();
    Map<String, Integer> written = write(db, 10, 1, 10);
    Eventually.await("the first batch published", () -> first.delivered().size() >= 100);
    assertThat(standby.isReading()).isFalse();

    firstExecutor.shutdownNow();
    terminateReader(db, "failover");
    written = write(db, 10, 11, 10);

    Eventually.await("the standby reads", standby::isReading);
    Eventually.await("everything completed", () -> pending(db) == 0);
    List<String> payloads = new ArrayList<>(first.deliveredPayloads());
    payloads.addAll(second.deliveredPayloads());
    DeliveryChecker.Verdict verdict = DeliveryChecker.check(written, payloads);
    assertThat(second.delivered()).isNotEmpty();
    assertThat(verdict.lost()).isZero();
    assertThat(verdict.reordered()).isZero();
  }

  /**
   * The fail-over interleaving a reader's parking used to lose: the active reader is recording a
   * failure (its parking transaction waits on a row lock) when its WAL sender dies; the standby
   * attaches and loads the parked aggregates before that parking commits. The new reader then read
   * the event again from the slot and published it while the drainer published the parked row too:
   * twice, and the copy could land after a later event of its aggregate. Now the new reader's load
   * waits for parkings in flight and sees them, and a parking that starts after a fail-over is
   * refused, so each event goes out by exactly one path.
   */
  @Test
  void aParkingCommittedWhileTheStandbyAttachesIsSeenByTheNewReader() throws Exception {
    CompletableFuture<List<PublishResult>> firstAnswer = new CompletableFuture<>();
    CompletableFuture<List<PublishResult>> secondReaderHold = new CompletableFuture<>();
    ScriptedPublisher first = new ScriptedPublisher(firstAnswer);
    ScriptedPublisher second = new ScriptedPublisher(secondReaderHold);
    AtomicInteger handedOver = new AtomicInteger();
    RelayListener heldBack =
        new RelayListener() {
          @Override
          public void onBatch(BatchReport report) {
            handedOver.addAndGet(report.heldBack());
          }
        };
    // An hour's backoff: the drainer takes the parked event only once the test lets the hour pass,
    // after the new reader has read it again (else it could publish and complete it first, and the
    // new
    // reader, finding the aggregate drained, would publish it again: a replay, at least once).
    RelayConfig config =
        config().exponentialBackoff(Duration.ofHours(1), 1.0, 0.0, Duration.ofHours(1)).build();
    WalRelay active = relays.relay("park_fence", first, config);
    active.start();
    Eventually.await("the first instance reads", active::isReading);
    WalRelay standby = relays.relay("park_fence", second, config, relays.executor(), heldBack);
    standby.start();
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    db.dsl().transaction(tx -> outbox.append(tx.dsl(), event("bad", 1)));
    Eventually.await("the first reader publishes the event", () -> first.firstAttempts.get() == 1);

    try (Connection rowLock = db.connect()) {
      rowLock.setAutoCommit(false);
      try (Statement s = rowLock.createStatement()) {
        s.execute("select 1 from outbox_events where aggregate_id = 'bad' for update");
      }
      firstAnswer.complete(List.of(PublishResult.retryable("broker says no")));
      Eventually.await("the first reader's parking waits on the row", () -> lockWaiters() >= 1);
      terminateReader(db, "park_fence");
      Eventually.await(
          "the standby attached (or waits for the parking in flight)",
          () -> standby.isReading() || lockWaiters() >= 2);
      rowLock.commit();
    }
    Eventually.await(
        "the new reader handed the event over (or published it)",
        () -> handedOver.get() >= 1 || second.firstAttempts.get() >= 1);
    // The hour passes.
    db.execute("update outbox_events set retry_after = now() where aggregate_id = 'bad'");

    Eventually.await(
        "the drainer published the parked event",
        () -> first.retries.get() + second.retries.get() >= 1);
    secondReaderHold.complete(List.of(PublishResult.published()));
    Eventually.await("everything completed", () -> pending(db) == 0);
    assertThat(first.delivered.size() + second.delivered.size())
        .as("published by the drainer alone, not by the new reader as well")
        .isOne();
    assertThat(second.firstAttempts.get())
        .as("the new reader saw the aggregate parked and handed the event over")
        .isZero();
  }

  /**
   * The other side of the fence: a reader whose WAL sender died while its publisher was answering
   * may not park the failure once another reader attached, which has read the event again as
   * unparked and is publishing it. Before the fence both that reader and the drainer published it.
   */
  @Test
  void aReaderThatLostTheSlotCannotParkAnyMore() throws Exception {
    CompletableFuture<List<PublishResult>> firstAnswer = new CompletableFuture<>();
    CompletableFuture<List<PublishResult>> secondReaderHold = new CompletableFuture<>();
    ScriptedPublisher first = new ScriptedPublisher(firstAnswer);
    ScriptedPublisher second = new ScriptedPublisher(secondReaderHold);
    DatabaseErrors errors = new DatabaseErrors();
    WalRelay active =
        relays.relay("park_refused", first, config().build(), relays.executor(), errors);
    active.start();
    Eventually.await("the first instance reads", active::isReading);
    WalRelay standby = relays.relay("park_refused", second, config().build());
    standby.start();
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    db.dsl().transaction(tx -> outbox.append(tx.dsl(), event("bad", 1)));
    Eventually.await("the first reader publishes the event", () -> first.firstAttempts.get() == 1);

    terminateReader(db, "park_refused");
    Eventually.await("the standby attached", standby::isReading);
    Eventually.await("the new reader publishes the event", () -> second.firstAttempts.get() == 1);
    firstAnswer.complete(List.of(PublishResult.retryable("broker says no")));
    Eventually.await(
        "the old reader's parking refused (or the drainer published what it parked)",
        () -> !errors.errors().isEmpty() || first.retries.get() + second.retries.get() > 0);
    secondReaderHold.complete(List.of(PublishResult.published()));

    Eventually.await("everything completed", () -> pending(db) == 0);
    assertThat(first.delivered.size() + second.delivered.size())
        .as("published by the new reader alone, not by the drainer as well")
        .isOne();
    assertThat(first.retries.get() + second.retries.get()).isZero();
    assertThat(errors.errors())
        .extracting(Throwable::getMessage)
        .anyMatch(m -> m.contains("no longer streams replication slot park_refused"));
  }

  /**
   * The first start creates the slot and then parks the backlog (the rows the slot will never
   * stream) for the drainer. When the parking failed (here a trigger refuses it, as a lost
   * connection or a lock timeout would) the slot stayed, the next start found it and parked
   * nothing, and the backlog was neither parked nor streamed: never published. Now the slot is made
   * only once the parking committed (from a temporary staging slot): the start fails leaving no
   * slot, and the next start creates it and parks the backlog.
   */
  @Test
  void aFirstStartThatCannotParkTheBacklogLeavesNoSlotBehind() throws Exception {
    Map<String, Integer> backlog = write(db, 2, 1, 3);
    RecordingPublisher publisher = new RecordingPublisher();
    db.execute(
        "create function refuse_parking() returns trigger language plpgsql as $$"
            + " begin raise exception 'parking refused by the test'; end $$;"
            + " create trigger refuse_parking before update of parked on outbox_events"
            + " for each row execute function refuse_parking()");
    try {
      WalRelay first = relays.relay("park_backlog", publisher, config().build());
      assertThatThrownBy(first::start)
          .isInstanceOf(dev.pgoutbox.core.OutboxException.class)
          .hasMessageContaining(
              "could not park the events pending before the new replication slot");
    } finally {
      db.execute("drop trigger refuse_parking on outbox_events; drop function refuse_parking()");
    }
    assertThat(slotExists(db, "park_backlog")).as("the slot it created is gone").isFalse();

    WalRelay second = relays.relay("park_backlog", publisher, config().build());
    second.start();
    Eventually.await("the backlog published by the drainer", () -> pending(db) == 0);
    assertNoneLostOrReordered(backlog, publisher.deliveredPayloads());
  }

  /**
   * Two instances started together on a new slot, as the move from the table relay says to do. The
   * first created the slot, then parked the backlog in a second commit; the second saw the slot,
   * attached with nothing parked, and published a new event of an aggregate whose older event was
   * still unparked in the backlog. Now the slot exists only once the backlog is parked (made from a
   * temporary staging slot), and the second start waits for the first one's creation lock.
   */
  @Test
  void twoInstancesStartingTogetherOnANewSlotKeepTheBacklogsOrder() throws Exception {
    Map<String, Integer> written = new HashMap<>(write(db, 1, 1, 1));
    RecordingPublisher publisher = new RecordingPublisher();
    ScheduledExecutorService starter =
        relays.executor(); // the common pool may have a single thread
    try (Connection gate = holdBacklogParking()) {
      WalRelay first = relays.relay("together", publisher, config().build());
      CompletableFuture<Void> firstStart = CompletableFuture.runAsync(first::start, starter);
      Eventually.await("the first start's parking is held", () -> lockWaiters() >= 1);
      WalRelay second = relays.relay("together", publisher, config().build());
      CompletableFuture<Void> secondStart = CompletableFuture.runAsync(second::start, starter);
      written.putAll(write(db, 1, 2, 1)); // after the slot's creation: in the stream
      Eventually.await(
          "the second start waits (or, before, published the new event)",
          () -> lockWaiters() >= 2 || !publisher.delivered().isEmpty());
      release(gate);
      firstStart.get(60, TimeUnit.SECONDS);
      secondStart.get(60, TimeUnit.SECONDS);
    } finally {
      db.execute("drop trigger hold_parking on outbox_events; drop function hold_parking()");
    }
    Eventually.await("everything delivered", () -> pending(db) == 0);
    DeliveryChecker.Verdict verdict = DeliveryChecker.check(written, publisher.deliveredPayloads());
    assertThat(verdict.lost()).isZero();
    assertThat(verdict.reordered()).as("the backlog's event first").isZero();
  }

  /**
   * The same, the first start's parking held past the relay's lock timeout. It used to say it had
   * dropped the slot, which the second instance was streaming, and the backlog was never published.
   * Now the slot was never made: the first start says so, and the second makes it and parks.
   */
  @Test
  void aFirstStartWhoseParkingTimesOutBesideASecondOneLosesNothing() throws Exception {
    Map<String, Integer> written = new HashMap<>(write(db, 1, 1, 1));
    RecordingPublisher publisher = new RecordingPublisher();
    ScheduledExecutorService starter =
        relays.executor(); // the common pool may have a single thread
    try (Connection gate = holdBacklogParking()) {
      WalRelay first = relays.relay("together_late", publisher, config().build());
      CompletableFuture<Void> firstStart = CompletableFuture.runAsync(first::start, starter);
      Eventually.await("the first start's parking is held", () -> lockWaiters() >= 1);
      WalRelay second = relays.relay("together_late", publisher, config().build());
      CompletableFuture<Void> secondStart = CompletableFuture.runAsync(second::start, starter);
      written.putAll(write(db, 1, 2, 1));
      assertThatThrownBy(() -> firstStart.get(60, TimeUnit.SECONDS))
          .hasCauseInstanceOf(dev.pgoutbox.core.OutboxException.class)
          .cause()
          .hasMessageContaining("could not park the events pending before the new replication slot")
          .hasMessageContaining("the slot was not created")
          .hasMessageNotContaining("the slot was dropped");
      release(gate);
      secondStart.get(60, TimeUnit.SECONDS);
    } finally {
      db.execute("drop trigger hold_parking on outbox_events; drop function hold_parking()");
    }
    Eventually.await("everything delivered", () -> pending(db) == 0);
    assertNoneLostOrReordered(written, publisher.deliveredPayloads());
  }

  /**
   * Makes every parking of a pending row wait on an advisory lock the returned session holds (a
   * lock without a transaction id, so it does not hold up the slot's creation); {@link #release}.
   */
  private static Connection holdBacklogParking() throws SQLException {
    db.execute(
        "create function hold_parking() returns trigger language plpgsql as $$"
            + " begin perform pg_advisory_xact_lock_shared(4242, 40); return new; end $$;"
            + " create trigger hold_parking before update of parked on outbox_events"
            + " for each row when (new.parked and not old.parked)"
            + " execute function hold_parking()");
    Connection gate = db.connect();
    try (Statement s = gate.createStatement()) {
      s.execute("select pg_advisory_lock(4242, 40)");
    }
    return gate;
  }

  private static void release(Connection gate) throws SQLException {
    try (Statement s = gate.createStatement()) {
      s.execute("select pg_advisory_unlock(4242, 40)");
    }
  }

  @Test
  void aReaderWhoseConnectionDiesSilentlyAttachesAgain() throws Exception {
    try (TcpProxy network = TcpProxy.toServerOf(db.jdbcUrl())) {
      Properties properties = new Properties();
      // The server ends a WAL sender that hears nothing from its reader after 1 s.
      properties.setProperty("options", "-c wal_sender_timeout=1s");
      properties.setProperty("loginTimeout", "5");
      RecordingPublisher publisher = new RecordingPublisher();
      relays.dropAfterwards("silent");
      WalRelay relay =
          WalRelay.builder()
              .name("wal-silent")
              .dataSource(db.dataSource())
              .schema(db.schema())
              .publisher(publisher)
              .config(config().build())
              .slotName("silent")
              .publicationName("pub_" + db.schema())
              .attachRetryInterval(Duration.ofMillis(200))
              .executor(relays.executor())
              .replicationConnection(network.route(db.jdbcUrl()), properties)
              .build();
      relays.stopAfterwards(relay);
      relay.start();
      Eventually.await("the reader attached", relay::isReading);
      write(db, 2, 1, 1);
      Eventually.await("published", () -> publisher.delivered().size() == 2);

      // Bytes dropped both ways: the reader's connection hangs, its reads see nothing, no error.
      network.blackhole();
      Eventually.await("the server ended the silent WAL sender", () -> readerPid("silent") == null);
      network.restore();
      Map<String, Integer> written = write(db, 2, 2, 1);

      // The new stream may deliver the first events again (the slot's confirmation can trail
      // what was published): wait for the new events themselves, not for a count of deliveries.
      Eventually.await(
          "the new events published through a new stream",
          () -> DeliveryChecker.check(written, publisher.deliveredPayloads()).lost() == 0);
      DeliveryChecker.Verdict verdict =
          DeliveryChecker.check(written, publisher.deliveredPayloads());
      assertThat(verdict.reordered()).isZero();
      Eventually.await("everything completed", () -> pending(db) == 0);
    }
  }

  private static @Nullable Integer readerPid(String slot) {
    try (Connection c = db.connect();
        PreparedStatement ps =
            c.prepareStatement("select active_pid from pg_replication_slots where slot_name = ?")) {
      ps.setString(1, slot);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        int pid = rs.getInt(1);
        return rs.wasNull() ? null : pid;
      }
    } catch (SQLException e) {
      throw new IllegalStateException("could not read slot " + slot, e);
    }
  }

  @Test
  void aDroppedSlotFallsBackToTheTableRelay() throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    WalRelay relay = relays.relay("dropped", publisher, config().build());
    relay.start();
    Eventually.await("the reader attached", relay::isReading);
    write(db, 5, 1, 2);
    Eventually.await("published through the slot", () -> publisher.delivered().size() == 10);

    Eventually.await(
        "the slot dropped",
        () -> {
          terminateReader(db, "dropped");
          return db.dropReplicationSlot("dropped");
        });
    Map<String, Integer> written = write(db, 5, 3, 2);

    Eventually.await("the relay fell back", relay::hasFallenBack);
    Eventually.await("everything completed by the table relay", () -> pending(db) == 0);
    assertNoneLostOrReordered(written, publisher.deliveredPayloads());
  }

  @Test
  void theSlotsLagInTimeGrowsWhileThePublisherIsHeldAndLeavesParkedEventsOut() throws Exception {
    AtomicBoolean brokerRefusesBad = new AtomicBoolean(true);
    RecordingPublisher publisher = refusingAggregateBad(brokerRefusesBad).closeGate();
    List<WalSlotStats> heard = new CopyOnWriteArrayList<>();
    RelayListener listener = slotStatsInto(heard);
    WalRelay relay =
        relays.relay(
            "lag_time",
            publisher,
            config().metricsRefreshInterval(Duration.ofMillis(100)).build(),
            relays.executor(),
            listener);
    OutboxAdmin admin =
        OutboxAdmin.builder().dataSource(db.dataSource()).schema(db.schema()).build();
    relay.start();
    Eventually.await("the reader attached", relay::isReading);
    assertThat(lagTime(admin)).as("nothing written: caught up").isZero();

    write(db, 1, 1, 1);
    assertThat(publisher.awaitEntered(20)).as("the batch reached the held publisher").isTrue();
    Duration first = lagTime(admin);
    assertThat(first).isPositive();
    Eventually.await(
        "the lag grows while the publisher is held", () -> lagTime(admin).compareTo(first) > 0);
    Eventually.await(
        "the listener hears it",
        () -> !heard.isEmpty() && heard.get(heard.size() - 1).lagTime().isPositive());

    publisher.open();
    Eventually.await("caught up: no lag", () -> pending(db) == 0 && lagTime(admin).isZero());
    Eventually.await(
        "the listener hears the lag fall back to 0",
        () -> heard.get(heard.size() - 1).lagTime().isZero());

    db.dsl()
        .transaction(
            tx -> Outbox.builder().schema(db.schema()).build().append(tx.dsl(), event("bad", 1)));
    Eventually.await(
        "the failing event parked",
        () ->
            db.queryLong("select count(*) from outbox_events where parked and attempts > 0") == 1);
    Eventually.await(
        "a parked event is the table relay's lag, not the slot's", () -> lagTime(admin).isZero());
    assertThat(pending(db)).as("the parked event is still pending").isOne();
    brokerRefusesBad.set(false);
    Eventually.await("the table relay drained it", () -> pending(db) == 0);
  }

  private static Duration lagTime(OutboxAdmin admin) {
    return admin.walSlot("lag_time").orElseThrow().lagTime();
  }

  /** A broker that answers "retryable" for aggregate {@code bad} while {@code refusing}. */
  private static RecordingPublisher refusingAggregateBad(AtomicBoolean refusing) {
    return new RecordingPublisher()
        .decide(
            m ->
                m.aggregateId().equals("bad") && refusing.get()
                    ? PublishResult.retryable("broker says no")
                    : PublishResult.published());
  }

  private static long lockWaiters() {
    return db.queryLong(
        "select count(*) from pg_stat_activity where wait_event_type = 'Lock'"
            + " and datname = current_database()");
  }

  /**
   * Answers an event's first attempt (as the reader streams it) with {@code firstAttemptAnswer},
   * which the test completes, and publishes retries (the drainer's claims) at once.
   */
  private static final class ScriptedPublisher implements Publisher {
    final CompletableFuture<List<PublishResult>> firstAttemptAnswer;
    final AtomicInteger firstAttempts = new AtomicInteger();
    final AtomicInteger retries = new AtomicInteger();
    final List<OutboxMessage> delivered = new CopyOnWriteArrayList<>();

    ScriptedPublisher(CompletableFuture<List<PublishResult>> firstAttemptAnswer) {
      this.firstAttemptAnswer = firstAttemptAnswer;
    }

    @Override
    public CompletionStage<List<PublishResult>> publish(List<OutboxMessage> batch) {
      if (batch.size() != 1) {
        throw new IllegalStateException("one event at a time in this test, got " + batch.size());
      }
      OutboxMessage message = batch.get(0);
      if (message.attempt() == 1) {
        firstAttempts.incrementAndGet();
        return firstAttemptAnswer.thenApply(
            answer -> {
              if (answer.get(0) instanceof PublishResult.Published) {
                delivered.add(message);
              }
              return answer;
            });
      }
      retries.incrementAndGet();
      delivered.add(message);
      return CompletableFuture.completedFuture(List.of(PublishResult.published()));
    }
  }
}

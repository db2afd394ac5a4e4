package dev.pgoutbox.relay;

import static dev.pgoutbox.relay.testing.EventRows.event;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgoutbox.admin.OutboxAdmin;
import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.relay.testing.TestWalRelays;
import dev.pgoutbox.relay.wal.WalRelay;
import dev.pgoutbox.testing.DeliveryChecker;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.nio.ByteBuffer;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.XAConnection;
import javax.transaction.xa.XAException;
import javax.transaction.xa.XAResource;
import javax.transaction.xa.Xid;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.postgresql.xa.PGXADataSource;

/**
 * Two-phase commit (XA, as a JTA transaction manager with two resources drives it): the business
 * row and the event are written through pgjdbc's {@link PGXADataSource}, then {@code PREPARE
 * TRANSACTION}, then {@code COMMIT PREPARED} or {@code ROLLBACK PREPARED}, exactly the calls a
 * transaction manager makes. PostgreSQL refuses to prepare a transaction that sent {@code NOTIFY},
 * and the outbox's wake-up trigger sends one: before the setting {@code pgoutbox.notify}, every
 * such transaction failed at prepare. A session with {@code pgoutbox.notify=off} commits its events
 * silently; the relays find them without a notification, the table relay by its polls and full
 * scans, the WAL relay when the commit is decoded.
 */
class TwoPhaseCommitIT {

  @RegisterExtension static final TestSchema db = TestSchema.migratedWithLogicalDecoding(6);

  private static final AtomicInteger XIDS = new AtomicInteger();

  private final List<AutoCloseable> closing = new ArrayList<>();
  private final List<ScheduledExecutorService> executors = new ArrayList<>();

  @BeforeAll
  static void ordersTable() {
    db.execute("CREATE TABLE IF NOT EXISTS " + db.schema() + ".xa_orders (id text PRIMARY KEY)");
  }

  @BeforeEach
  void empty() {
    db.execute("TRUNCATE outbox_events, " + db.schema() + ".xa_orders");
  }

  @AfterEach
  void close() throws Exception {
    for (AutoCloseable c : closing.reversed()) {
      c.close();
    }
    executors.forEach(ScheduledExecutorService::shutdownNow);
    // ROLLBACK PREPARED runs only as a statement of its own, never inside a DO block.
    for (String gid : preparedTransactions()) {
      db.execute("ROLLBACK PREPARED '" + gid.replace("'", "''") + "'");
    }
  }

  @Test
  void withNotificationsOffAPreparedTransactionCommitsItsEventAndTheTableRelayPublishesIt()
      throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    OutboxRelay relay = tableRelay(publisher);

    Branch branch = begin(silentSession(), "o-1", 1);
    branch.prepare();
    assertThat(relay.runOnce()).as("a prepared event is not committed yet").isZero();
    branch.commit();

    assertThat(relay.runOnce()).isEqualTo(1);
    assertThat(publisher.deliveredPayloads()).extracting(DeliveryChecker::seqOf).containsExactly(1);
    assertThat(db.queryLong("SELECT count(*) FROM " + db.schema() + ".xa_orders")).isOne();
  }

  @Test
  void aRolledBackPreparedTransactionLeavesNeitherItsRowNorItsEvent() throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    OutboxRelay relay = tableRelay(publisher);

    Branch branch = begin(silentSession(), "o-1", 1);
    branch.prepare();
    branch.rollback();

    assertThat(relay.runOnce()).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM outbox_events")).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM " + db.schema() + ".xa_orders")).isZero();
  }

  @Test
  void withNotificationsOnPrepareFailsAndNothingIsWritten() throws Exception {
    Branch branch = begin(defaultSession(), "o-1", 1);

    assertThatThrownBy(branch::prepare)
        .isInstanceOf(XAException.class)
        .cause()
        .hasMessageContaining("NOTIFY");

    assertThat(db.queryLong("SELECT count(*) FROM outbox_events")).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM " + db.schema() + ".xa_orders")).isZero();
  }

  /**
   * A prepared transaction keeps the writer's per-aggregate lock until its outcome: a later writer
   * of the same aggregate waits for it, so its event gets the later position and commits after, and
   * the relay publishes the two in order. Had the prepare released the lock, the later writer could
   * commit first and the table relay, which follows positions, would publish it first.
   */
  @Test
  void aWriterOfTheSameAggregateWaitsForThePreparedTransaction() throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    OutboxRelay relay = tableRelay(publisher);
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    Branch first = begin(silentSession(), "o-1", 1);
    first.prepare();

    try (Connection later = db.connect()) {
      later.setAutoCommit(false);
      int pid = TestSchema.backendPid(later);
      CompletableFuture<Void> written =
          CompletableFuture.runAsync(
              () -> {
                try {
                  outbox.append(later, event("o-1", 2));
                  later.commit();
                } catch (SQLException e) {
                  throw new IllegalStateException(e);
                }
              });
      db.awaitWaitingForLock(pid, "advisory");
      assertThat(relay.runOnce()).as("nothing committed yet").isZero();

      first.commit();
      written.get(30, TimeUnit.SECONDS);
    }

    while (relay.runOnce() > 0) {
      // claim until both are published
    }
    assertThat(publisher.deliveredPayloads())
        .extracting(DeliveryChecker::seqOf)
        .containsExactly(1, 2);
  }

  /**
   * A transaction manager that dies between its phases leaves the prepared transaction behind, with
   * no session: it holds back vacuum of the outbox like any open transaction, so it must show in
   * the signal operators alert on ({@code outbox_oldest_transaction_age_seconds}, the relay's
   * vacuum warning), which read only the sessions of {@code pg_stat_activity}.
   */
  @Test
  void anOrphanedPreparedTransactionShowsAsTheOldestOpenTransaction() throws Exception {
    OutboxAdmin admin =
        OutboxAdmin.builder().dataSource(db.dataSource()).schema(db.schema()).build();
    Branch orphan = begin(silentSession(), "o-1", 1);
    orphan.prepare();
    closing.removeLast().close(); // its XA connection closed: nothing but the prepared transaction

    Eventually.await(
        "prepared 200 ms ago",
        () ->
            db.queryLong(
                    "SELECT (extract(epoch FROM clock_timestamp() - prepared) * 1000)::bigint"
                        + " FROM pg_prepared_xacts WHERE database = current_database()")
                >= 200);

    assertThat(admin.oldestTransactionAge()).isGreaterThanOrEqualTo(Duration.ofMillis(200));
    assertThat(admin.stats().oldestTransactionAge()).isGreaterThanOrEqualTo(Duration.ofMillis(200));
  }

  /**
   * The prepared event has the lowest position but commits last, after the relay published later
   * events of other aggregates and its low-water mark passed it; no notification announces it.
   */
  @Test
  void aPreparedEventCommittedLateIsFoundWithoutANotification() throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    OutboxRelay relay = tableRelay(publisher);
    relay.start();
    Branch late = begin(silentSession(), "late", 1);
    late.prepare();

    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    for (int seq = 1; seq <= 20; seq++) {
      OutboxEvent event = event("other-" + seq, 1);
      db.dsl().transaction(tx -> outbox.append(tx.dsl(), event));
    }
    Eventually.await("the later events published", () -> publisher.delivered().size() == 20);
    late.commit();

    Eventually.await("the late event published", () -> publisher.published("late"));
    // The relay marks a batch after its publish returns: wait for that commit too.
    Eventually.await(
        "every event marked processed",
        () -> db.queryLong("SELECT count(*) FROM outbox_events WHERE processed_at IS NULL") == 0);
  }

  /**
   * The WAL relay sees a prepared transaction when {@code COMMIT PREPARED} is decoded: in commit
   * order, after a transaction of the same aggregate that was written later but committed first; a
   * transaction rolled back after its prepare never reaches the publisher.
   */
  @Test
  void theWalRelayPublishesPreparedTransactionsInCommitOrder() throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    WalRelay relay = walRelay("two_phase", publisher);
    relay.start();
    Eventually.await("the reader attached", relay::isReading);
    Outbox unserialized =
        Outbox.builder().schema(db.schema()).serializeWritersPerAggregate(false).build();

    Branch first = begin(silentSession(), unserialized, "o-1", 2);
    first.prepare();
    Branch abandoned = begin(silentSession(), unserialized, "o-1", 99);
    abandoned.prepare();
    try (Connection second = db.connect()) {
      second.setAutoCommit(false);
      unserialized.append(second, event("o-1", 1));
      second.commit();
    }
    abandoned.rollback();
    first.commit();

    Eventually.await("both committed events published", () -> publisher.delivered().size() >= 2);
    Eventually.await(
        "both completed",
        () -> db.queryLong("SELECT count(*) FROM outbox_events WHERE processed_at IS NULL") == 0);
    assertThat(publisher.deliveredPayloads())
        .extracting(DeliveryChecker::seqOf)
        .containsExactly(1, 2);
  }

  private static List<String> preparedTransactions() {
    return db.dsl()
        .fetch("SELECT gid FROM pg_prepared_xacts WHERE database = current_database()")
        .getValues(0, String.class);
  }

  private OutboxRelay tableRelay(Publisher publisher) {
    OutboxRelay relay =
        OutboxRelay.builder()
            .name("two-phase")
            .dataSource(db.dataSource())
            .schema(db.schema())
            .publisher(publisher)
            .executor(executor())
            .build();
    closing.add(relay);
    return relay;
  }

  private WalRelay walRelay(String slot, Publisher publisher) {
    WalRelay relay = TestWalRelays.builder(db, slot, publisher).executor(executor()).build();
    closing.add(
        () -> {
          relay.stop(Duration.ofSeconds(2));
          Eventually.await("slot " + slot + " dropped", () -> db.dropReplicationSlot(slot));
        });
    return relay;
  }

  private ScheduledExecutorService executor() {
    ScheduledExecutorService executor =
        Executors.newScheduledThreadPool(3, Thread.ofPlatform().daemon(true).factory());
    executors.add(executor);
    return executor;
  }

  /** Sessions that turn the outbox's notification off, as the docs tell XA data sources to. */
  private PGXADataSource silentSession() {
    PGXADataSource dataSource = defaultSession();
    dataSource.setOptions("-c pgoutbox.notify=off");
    return dataSource;
  }

  private PGXADataSource defaultSession() {
    PGXADataSource dataSource = new PGXADataSource();
    dataSource.setURL(db.jdbcUrl());
    return dataSource;
  }

  private Branch begin(PGXADataSource dataSource, String aggregate, int seq) throws Exception {
    return begin(dataSource, Outbox.builder().schema(db.schema()).build(), aggregate, seq);
  }

  /** Starts an XA branch that writes an order row and its event, and leaves it for prepare. */
  private Branch begin(PGXADataSource dataSource, Outbox outbox, String aggregate, int seq)
      throws Exception {
    XAConnection xa = dataSource.getXAConnection();
    closing.add(xa::close);
    XAResource resource = xa.getXAResource();
    Xid xid = new TestXid(XIDS.incrementAndGet());
    Connection connection = xa.getConnection();
    resource.start(xid, XAResource.TMNOFLAGS);
    try (PreparedStatement order =
        connection.prepareStatement("INSERT INTO " + db.schema() + ".xa_orders VALUES (?)")) {
      order.setString(1, aggregate + "-" + seq);
      order.executeUpdate();
    }
    outbox.append(connection, event(aggregate, seq));
    resource.end(xid, XAResource.TMSUCCESS);
    return new Branch(resource, xid);
  }

  /** An XA branch between end and its outcome, driven as a transaction manager drives it. */
  private record Branch(XAResource resource, Xid xid) {
    void prepare() throws XAException {
      assertThat(resource.prepare(xid)).isEqualTo(XAResource.XA_OK);
    }

    void commit() throws XAException {
      resource.commit(xid, false);
    }

    void rollback() throws XAException {
      resource.rollback(xid);
    }
  }

  private record TestXid(int id) implements Xid {
    @Override
    public int getFormatId() {
      return 4711;
    }

    @Override
    public byte[] getGlobalTransactionId() {
      return ByteBuffer.allocate(8).putLong(id).array();
    }

    @Override
    public byte[] getBranchQualifier() {
      return new byte[] {1};
    }
  }
}

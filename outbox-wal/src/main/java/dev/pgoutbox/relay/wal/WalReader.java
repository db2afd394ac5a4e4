package dev.pgoutbox.relay.wal;

import dev.pgoutbox.core.internal.SearchPath;
import dev.pgoutbox.relay.ListenConnectionFactory;
import dev.pgoutbox.relay.PublishTracing;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.RelayListener;
import dev.pgoutbox.relay.WalSlotStats;
import dev.pgoutbox.relay.internal.ClaimedRow;
import dev.pgoutbox.relay.internal.RelayLog;
import dev.pgoutbox.relay.internal.Sql;
import java.nio.ByteBuffer;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.jooq.conf.Settings;
import org.jspecify.annotations.Nullable;
import org.postgresql.PGConnection;
import org.postgresql.replication.PGReplicationStream;

/**
 * The WAL relay's reader: attaches to the slot (or stands by while another instance streams it),
 * reads committed transactions in commit order, publishes their events in batches, parks failures
 * and the later events of their aggregates for the drainer, and confirms to the slot only what is
 * settled ({@link WalCompleter}). A chain of short tasks on the executor, like {@link RelayLoop};
 * while idle it waits for data on the executor's thread, at most {@link #IDLE_SLICE} at a time.
 *
 * <p>The rules it follows are told in docs/wal-relay-internals.md: it publishes a row only if the
 * row is not parked, and only it parks rows.
 */
final class WalReader implements Runnable {

  /** Longest wait for data in one task, so that stop() is answered promptly. */
  static final Duration IDLE_SLICE = Duration.ofMillis(100);

  /**
   * How often an idle reader asks the server whether its WAL sender still streams the slot. A
   * stream whose connection died silently (the server crashed behind a proxy, a network partition)
   * reads as idle forever: pgjdbc's non-blocking read sees no data and no error. Once the server
   * has ended the WAL sender (at once after a crash, after {@code wal_sender_timeout} of silence),
   * the slot shows another process or none, and the reader attaches again.
   */
  static final Duration STREAM_CHECK_EVERY = Duration.ofSeconds(5);

  /**
   * Full batches' worth of published rows awaiting completion before the reader stops reading and
   * lets the completer catch up: what a crash would publish again stays within this many batches.
   * Counted in rows, not in the completer's work items: at a few hundred events a second each
   * transaction is a batch of its own, and 64 items then filled in about 130 ms, so a completion
   * held up that long by a slow disk (writers' commits took up to 63 ms at such moments) stopped
   * the reader and added the wait to every event behind it. Capped at what one completion statement
   * takes ({@link WalCompleter#MAX_POSITIONS}), whatever the batch size.
   */
  static final int MAX_COMPLETER_BACKLOG_BATCHES = 64;

  /**
   * How often, at most, the reader checks its publication before confirming to the slot. The slot
   * is confirmed only up to what was received before the last check but one that found the
   * publication as it was when the reader attached ({@link WalStreamChecks#confirm}): a publication
   * that stopped streaming the outbox's inserts (or some of them) makes the slot skip those events
   * for good, and a confirmation past them would leave them to no one.
   */
  static final Duration PUBLICATION_CHECK_EVERY = Duration.ofSeconds(1);

  /**
   * Most pending rows the reader notes when it attaches, to check that the slot streams them (a
   * slot advanced by hand skips them): the oldest ones by position.
   */
  static final int UNSEEN_CHECK_LIMIT = 10_000;

  private final ScheduledExecutorService executor;
  private final ListenConnectionFactory replicationConnections;
  private final WalSlot slot;
  private final RelayConfig config;
  private final RelayListener listener;
  private final RelayLog log;
  private final Duration attachRetry;
  private final SlotLost onSlotLost;
  private final WalCompleter completer;
  private final WalStreamChecks checks;
  private final WalSlotLoss slotLoss;
  private final WalUnseen unseen;
  private final WalParking parking;
  private final WalBatchPublisher publishing;
  private final String schema;
  private final CountDownLatch finished = new CountDownLatch(1);

  /** The message transport's events, when the stream asks for them ({@link #readMessages}). */
  private @Nullable WalMessages messages;

  private volatile boolean running;
  private volatile boolean active;
  private volatile @Nullable Thread worker;
  private @Nullable Connection connection;
  private @Nullable PGReplicationStream stream;
  private WalRows rows;
  private boolean inTransaction;
  private long ackable;
  private boolean standbyLogged;
  private final WalBatch batch = new WalBatch();

  /** The transaction whose changes are being read (from its Begin message). */
  private int readingXid;

  /** The commit LSN of the transaction being read (from its Begin message). */
  private long readingCommitLsn;

  /** A reader; {@link #start()} submits its first task. */
  public WalReader(
      ScheduledExecutorService executor,
      DataSource dataSource,
      String schema,
      Settings settings,
      ListenConnectionFactory replicationConnections,
      WalSlot slot,
      Publisher publisher,
      PublishTracing tracing,
      RelayConfig config,
      RelayListener listener,
      RelayLog log,
      Duration attachRetry,
      SlotLost onSlotLost) {
    this.executor = executor;
    this.schema = schema;
    this.replicationConnections = replicationConnections;
    this.slot = slot;
    this.config = config;
    this.listener = listener;
    this.log = log;
    this.attachRetry = attachRetry;
    this.onSlotLost = onSlotLost;
    this.rows = new WalRows(schema);
    this.completer =
        new WalCompleter(
            executor,
            dataSource,
            schema,
            config.completion(),
            config.synchronousCommit(),
            Sql.applicationName(log.relayName()) + "-wal",
            config.errorBackoffMax(),
            log);
    boolean release =
        config.deadLetterPolicy() == dev.pgoutbox.relay.DeadLetterPolicy.RELEASE_AGGREGATE;
    // Parking and the parked checks are rare: their sessions run under the fixed path throughout.
    DataSource pinned = SearchPath.pinned(dataSource);
    this.checks = new WalStreamChecks(slot);
    this.slotLoss = new WalSlotLoss(slot, log);
    this.unseen = new WalUnseen(pinned, schema, slot);
    this.parking = new WalParking(pinned, schema, settings, slot, checks, release, log);
    this.publishing =
        new WalBatchPublisher(
            publisher, tracing, config, listener, log, parking, unseen, completer);
  }

  /**
   * Also reads the message transport's events ({@code pgoutput}'s {@code messages 'true'},
   * PostgreSQL 14 and later), besides the rows; call before {@link #start()}.
   */
  public void readMessages() {
    this.messages = new WalMessages(schema, log);
  }

  /** Submits the first task. */
  public synchronized void start() {
    running = true;
    schedule(0);
  }

  /** Whether this instance streams the slot now (the others stand by). */
  public boolean isActive() {
    return active;
  }

  /** Whether the reader runs (started, not stopped, slot not lost). */
  public boolean isRunning() {
    return running && finished.getCount() > 0;
  }

  /** Rows the completer marked or deleted so far. */
  public long completed() {
    return completer.completed();
  }

  @Override
  public void run() {
    if (!running) {
      finish();
      return;
    }
    worker = Thread.currentThread();
    try {
      if (stream == null) {
        attach();
      } else {
        readAndPublish();
      }
    } catch (WalStreamChecks.PublicationDriftException | WalUnseen.SlotSkippedEventsException e) {
      // Closed unconfirmed; the slot skipped events for good (they are pending in the table), so
      // no reader may resume it: dropped, and every instance falls back (see docs/wal-relay.md).
      running = false;
      closeStream();
      // Before the drop: a slot of this name created from here on is a new one.
      long before = slotLoss.walInsertedOrNever();
      String notDropped = slot.dropStreamedOrNot(Duration.ofSeconds(10));
      finish();
      onSlotLost.lost(
          e.getMessage()
              + (notDropped == null
                  ? "; the slot was dropped, so that no reader resumes it"
                  : "; the slot could not be dropped ("
                      + notDropped
                      + "): drop it (SELECT pg_drop_replication_slot('"
                      + slot.slotName()
                      + "')) before any WAL relay starts again"),
          before);
    } catch (WalSlotLoss.SlotLostException e) {
      running = false;
      closeStream();
      finish();
      onSlotLost.lost(e.getMessage(), e.walBefore);
    } catch (InterruptedException e) {
      log.warn("WAL reader interrupted; what it read and did not settle is read again");
      running = false;
      closeStream();
      finish();
    } catch (Exception e) {
      if (running) {
        log.warn(
            "WAL reader lost its stream of slot {} ({}); attaching again in {}",
            slot.slotName(),
            e.toString(),
            attachRetry);
        listener.onDatabaseError(e, attachRetry);
      }
      closeStream();
      schedule(attachRetry.toMillis());
    } catch (Error e) {
      log.error("WAL reader stopped by {}", e.toString());
      running = false;
      closeStream();
      finish();
      throw e;
    } finally {
      worker = null;
    }
  }

  private void attach() throws SQLException {
    WalSlotStats state = slot.read();
    if (state == null || state.lost()) {
      slotLoss.requireSlot();
      schedule(0);
      return;
    }
    if (state.active()) {
      standBy("streamed by another instance");
      return;
    }
    // Read before the stream starts: a change to the publication from here on changes it.
    String baseline = checks.requireIntactPublication();
    unseen.load();
    Connection opened = replicationConnections.open();
    PGReplicationStream started;
    try {
      started =
          ReplicationConnections.startPgOutput(
              opened, slot.slotName(), slot.publicationName(), messages != null);
    } catch (SQLException e) {
      closeQuietly(opened);
      if ("55006".equals(e.getSQLState())) {
        standBy("another instance attached first");
        return;
      }
      String message = String.valueOf(e.getMessage());
      if ("42704".equals(e.getSQLState())
          || message.contains("invalidated")
          || message.contains("can no longer get changes")) {
        slotLoss.requireSlot();
        schedule(0);
        return;
      }
      throw e;
    }
    connection = opened;
    stream = started;
    checks.streamStarted(opened.unwrap(PGConnection.class).getBackendPID());
    rows = new WalRows(schema);
    inTransaction = false;
    batch.clear();
    // The new stream starts where the server's slot stands, which may be behind what the last
    // stream read (a crash forgets confirmations since the last checkpoint) or acknowledged. A
    // batch may only acknowledge commits read on this stream: the last stream's unsettled commits
    // are read again, and acknowledging them before that skips their events for good.
    ackable = 0;
    checks.attached(baseline);
    parking.loadParked();
    active = true;
    standbyLogged = false;
    log.info(
        "Attached to replication slot {} as the active reader ({} parked aggregate(s))",
        slot.slotName(),
        parking.size());
    schedule(0);
  }

  private void standBy(String why) {
    if (!standbyLogged) {
      log.info(
          "Standing by: replication slot {} is {}; trying again every {}",
          slot.slotName(),
          why,
          attachRetry);
      standbyLogged = true;
    }
    schedule(attachRetry.toMillis());
  }

  private void readAndPublish() throws SQLException, InterruptedException {
    PGReplicationStream current = stream;
    if (completer.backlogRows()
        > Math.min(
            (long) MAX_COMPLETER_BACKLOG_BATCHES * config.batchSize(),
            WalCompleter.MAX_POSITIONS)) {
      checks.confirm(current, completer.confirmedLsn());
      schedule(1);
      return;
    }
    long idleUntil = System.nanoTime() + IDLE_SLICE.toNanos();
    // A batch ends at batchSize rows or once its payloads and headers reach maxBatchBytes: the
    // stream hands rows over one at a time (the server spills large transactions to disk past
    // logical_decoding_work_mem), so the reader holds at most the budget plus one event.
    while (running && batch.size() < config.batchSize() && batch.bytes() < config.maxBatchBytes()) {
      // With a whole transaction in hand, publish it unless more has been received already: the
      // 1 ms pgjdbc waits for a next message is kept only while idle or inside a transaction.
      ByteBuffer buffer =
          !inTransaction && !batch.isEmpty()
              ? ReplicationSocketFactory.withoutWaiting(current::readPending)
              : current.readPending();
      if (buffer == null) {
        if (!batch.isEmpty() || System.nanoTime() - idleUntil > 0) {
          break;
        }
        confirmWhileIdle(current);
        continue;
      }
      switch (PgOutputDecoder.decode(buffer)) {
        case PgOutputDecoder.Begin b -> {
          if (unseen.pending() && b.finalLsn() >= unseen.until()) {
            unseen.check();
          }
          inTransaction = true;
          readingXid = b.xid();
          readingCommitLsn = b.finalLsn();
        }
        case PgOutputDecoder.Relation r -> {
          if (rows.relation(r)) {
            // Sent again: the publication may have changed (a table dropped from it and added
            // back, its options set and restored), and the events of the meantime are not in the
            // stream. Those after it must not be published before them: check first.
            checks.requireSamePublication();
          }
        }
        case PgOutputDecoder.Insert insert -> {
          ClaimedRow row = rows.row(insert);
          if (row != null) {
            unseen.seen(row);
            batch.add(row, readingCommitLsn, readingXid);
          }
        }
        case PgOutputDecoder.LogicalMessage m -> {
          ClaimedRow row = messages == null ? null : messages.row(m);
          if (row != null) {
            batch.add(row, readingCommitLsn, readingXid);
          }
        }
        case PgOutputDecoder.Commit c -> {
          inTransaction = false;
          ackable = Math.max(ackable, c.endLsn());
        }
        case PgOutputDecoder.Ignored i -> {}
      }
    }
    if (batch.isEmpty()) {
      checks.checkStillStreaming();
    }
    long ackLsn = ackable;
    if (!batch.isEmpty()) {
      publishing.publish(batch.take(), ackLsn, messages);
    } else {
      publishing.submitEmpty(ackLsn);
    }
    checks.confirm(current, completer.confirmedLsn());
    schedule(0);
  }

  /** With nothing in flight and no transaction half read, the slot may move to what was read. */
  private void confirmWhileIdle(PGReplicationStream current) throws SQLException {
    if (unseen.pending()
        && !inTransaction
        && current.getLastReceiveLSN().asLong() >= unseen.until()) {
      unseen.check();
    }
    if (!inTransaction
        && batch.isEmpty()
        && completer.backlog() == 0
        && completer.confirmedLsn() >= publishing.submittedAck()) {
      checks.confirm(current, current.getLastReceiveLSN().asLong());
    } else {
      checks.confirm(current, completer.confirmedLsn());
    }
  }

  private synchronized void schedule(long delayMillis) {
    if (!running) {
      finish();
      return;
    }
    try {
      executor.schedule(this, delayMillis, TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException e) {
      log.error("The executor refused the WAL reader's next task (shut down?); it stops");
      running = false;
      closeStream();
      finish();
    }
  }

  /**
   * Stops reading and waits up to {@code timeout} for the task in flight; then interrupts it. What
   * was read and not settled is read again by the next reader.
   */
  public boolean stop(Duration timeout) throws InterruptedException {
    running = false;
    completer.stop();
    if (worker == null && stream == null) {
      finish();
    }
    if (finished.await(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      return true;
    }
    Thread current = worker;
    if (current == null) {
      // No task runs and none will (the executor is gone): close here.
      finish();
      return false;
    }
    current.interrupt();
    finished.await(5, TimeUnit.SECONDS);
    return false;
  }

  private void finish() {
    if (finished.getCount() > 0) {
      closeStream();
      finished.countDown();
    }
  }

  private void closeStream() {
    active = false;
    PGReplicationStream s = stream;
    stream = null;
    Connection c = connection;
    connection = null;
    if (c != null) {
      // Closing the connection ends the stream; closing the stream first would wait for the
      // server to answer CopyDone, which a dead connection never does.
      closeQuietly(c);
    }
    if (s != null) {
      batch.clear();
    }
  }

  private static void closeQuietly(Connection c) {
    try {
      c.close();
    } catch (SQLException ignored) {
      // Already broken.
    }
  }

  /**
   * What the reader calls once its slot is unusable: why, and the WAL position read before it last
   * found it so (a slot of the name created from there on is a new one).
   */
  @FunctionalInterface
  public interface SlotLost {
    /** The reader stopped; {@code reason} says why. */
    void lost(String reason, long walBefore);
  }
}

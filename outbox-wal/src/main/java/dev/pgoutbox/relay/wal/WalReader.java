package dev.pgoutbox.relay.wal;

import dev.pgoutbox.core.internal.SearchPath;
import dev.pgoutbox.relay.Completion;
import dev.pgoutbox.relay.ListenConnectionFactory;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.PublishTracing;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.RelayListener;
import dev.pgoutbox.relay.RelayListener.BatchReport;
import dev.pgoutbox.relay.RelayListener.EventFailure;
import dev.pgoutbox.relay.WalSlotStats;
import dev.pgoutbox.relay.internal.ClaimedRow;
import dev.pgoutbox.relay.internal.FailureRules;
import dev.pgoutbox.relay.internal.Marker;
import dev.pgoutbox.relay.internal.MessageMapper;
import dev.pgoutbox.relay.internal.PublishCall;
import dev.pgoutbox.relay.internal.RelayLog;
import dev.pgoutbox.relay.internal.Sql;
import dev.pgoutbox.relay.internal.TracedBatch;
import java.nio.ByteBuffer;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.jooq.SQLDialect;
import org.jooq.conf.Settings;
import org.jooq.impl.DSL;
import org.jspecify.annotations.Nullable;
import org.postgresql.PGConnection;
import org.postgresql.replication.LogSequenceNumber;
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
   * publication as it was when the reader attached ({@link #confirmable}): a publication that
   * stopped streaming the outbox's inserts (or some of them) makes the slot skip those events for
   * good, and a confirmation past them would leave them to no one.
   */
  static final Duration PUBLICATION_CHECK_EVERY = Duration.ofSeconds(1);

  /**
   * Most pending rows the reader notes when it attaches, to check that the slot streams them (a
   * slot advanced by hand skips them): the oldest ones by position.
   */
  static final int UNSEEN_CHECK_LIMIT = 10_000;

  private final ScheduledExecutorService executor;
  private final DataSource dataSource;
  private final Settings settings;
  private final ListenConnectionFactory replicationConnections;
  private final WalSlot slot;
  private final Publisher publisher;
  private final PublishTracing tracing;
  private final RelayConfig config;
  private final RelayListener listener;
  private final RelayLog log;
  private final Duration attachRetry;
  private final SlotLost onSlotLost;
  private final WalCompleter completer;
  private final Marker marker;
  private final String parkSql;
  private final String stillParkedSql;
  private final String parkedAggregatesSql;
  private final String unseenSql;
  private final String stillUnsettledSql;
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
  private final Set<ClaimedRow.AggregateKey> parked = new HashSet<>();
  private boolean inTransaction;
  private long ackable;
  private long submittedAck;
  private long sentAck;
  private boolean standbyLogged;
  private int streamPid;
  private long lastStreamCheck;
  private @Nullable String publicationBaseline;
  private long verifiedLsn;
  private long checkedReceived;
  private long lastPublicationCheck;
  private final List<ClaimedRow> batch = new ArrayList<>();

  /** The commit LSN of each row's transaction in {@link #batch}: its place in commit order. */
  private final List<Long> batchCommitLsns = new ArrayList<>();

  /** The characters of the payloads and headers in {@link #batch}. */
  private long batchBytes;

  /** The transactions that wrote the rows of {@link #batch} ({@link CommittingWriters}). */
  private final Set<Integer> batchWriters = new HashSet<>();

  /** The transaction whose changes are being read (from its Begin message). */
  private int readingXid;

  /** The commit LSN of the transaction being read (from its Begin message). */
  private long readingCommitLsn;

  /**
   * The pending rows not parked when this stream attached, and not read from it yet, by aggregate:
   * each committed before {@link #unseenUntil}, so the slot streams each before any transaction
   * that commits from there on, unless its confirmed position was moved past them (a {@code
   * pg_replication_slot_advance} by hand). See {@link #checkUnseen}.
   */
  private final Map<ClaimedRow.AggregateKey, java.util.TreeSet<Long>> unseen = new HashMap<>();

  /** The WAL inserted when {@link #unseen} was read; 0 once checked. */
  private long unseenUntil;

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
    // Parking and the parked checks are rare: their sessions run under the fixed path throughout.
    this.dataSource = SearchPath.pinned(dataSource);
    this.schema = schema;
    this.settings = settings;
    this.replicationConnections = replicationConnections;
    this.slot = slot;
    this.publisher = publisher;
    this.tracing = tracing;
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
    this.marker = new Marker(Completion.MARK_PROCESSED, schema);
    boolean release =
        config.deadLetterPolicy() == dev.pgoutbox.relay.DeadLetterPolicy.RELEASE_AGGREGATE;
    this.parkSql = WalStatements.park(schema);
    this.stillParkedSql = WalStatements.stillParked(schema, release);
    this.parkedAggregatesSql = WalStatements.parkedAggregates(schema, release);
    this.unseenSql = WalStatements.unparkedPending(schema);
    this.stillUnsettledSql = WalStatements.stillUnparkedPending(schema);
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
    } catch (PublicationDriftException | SlotSkippedEventsException e) {
      // Closed unconfirmed; the slot skipped events for good (they are pending in the table), so
      // no reader may resume it: dropped, and every instance falls back (see docs/wal-relay.md).
      running = false;
      closeStream();
      // Before the drop: a slot of this name created from here on is a new one.
      long before = walInsertedOrNever();
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
    } catch (SlotLostException e) {
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
      requireSlot();
      return;
    }
    if (state.active()) {
      standBy("streamed by another instance");
      return;
    }
    // Read before the stream starts: a change to the publication from here on changes it.
    String baseline = requireIntactPublication();
    loadUnseen();
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
        requireSlot();
        return;
      }
      throw e;
    }
    connection = opened;
    stream = started;
    streamPid = opened.unwrap(PGConnection.class).getBackendPID();
    lastStreamCheck = System.nanoTime();
    rows = new WalRows(schema);
    inTransaction = false;
    batch.clear();
    batchCommitLsns.clear();
    batchBytes = 0;
    batchWriters.clear();
    // The new stream starts where the server's slot stands, which may be behind what the last
    // stream read (a crash forgets confirmations since the last checkpoint) or acknowledged. A
    // batch may only acknowledge commits read on this stream: the last stream's unsettled commits
    // are read again, and acknowledging them before that skips their events for good.
    ackable = 0;
    sentAck = 0;
    publicationBaseline = baseline;
    verifiedLsn = 0;
    checkedReceived = 0;
    lastPublicationCheck = System.nanoTime();
    loadParked();
    active = true;
    standbyLogged = false;
    log.info(
        "Attached to replication slot {} as the active reader ({} parked aggregate(s))",
        slot.slotName(),
        parked.size());
    schedule(0);
  }

  /**
   * The slot looked dropped or invalidated: fails with {@link SlotLostException} when it still is
   * after the WAL position was read (any slot of the name created from that position on is a new
   * one, which an instance that falls back follows), else tries to attach again at once.
   */
  private void requireSlot() throws SQLException {
    long before = slot.walInserted();
    WalSlotStats state = slot.read();
    if (state == null) {
      throw new SlotLostException(missingSlot(), before);
    }
    if (state.lost()) {
      throw new SlotLostException(
          "replication slot " + slot.slotName() + " was invalidated (wal_status lost)", before);
    }
    schedule(0);
  }

  /** The WAL inserted so far, or {@link Long#MAX_VALUE} when it cannot be read. */
  private long walInsertedOrNever() {
    try {
      return slot.walInserted();
    } catch (SQLException e) {
      log.warn("Could not read the WAL position ({})", e.toString());
      return Long.MAX_VALUE;
    }
  }

  /**
   * Why the slot is missing: an operator or another instance dropped it, or this server is a
   * promoted standby that never had it (PostgreSQL 16 and older keep no logical slot on a standby).
   */
  private String missingSlot() {
    return "replication slot "
        + slot.slotName()
        + " does not exist: it was dropped, or the database failed over to a standby that did not"
        + " have it";
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

  /**
   * Loads the parked aggregates behind the parking fence, taken exclusively: a parking that the
   * last reader still has in flight commits first and is seen here ({@link #recordParking}).
   */
  private void loadParked() throws SQLException {
    parked.clear();
    inWriteTransaction(
        c -> {
          slot.fence(c, true);
          int handedOver = slot.parkIfPublicationChanged(c);
          if (handedOver >= 0) {
            log.warn(
                "Publication {} changed since the position of slot {} (its catalog rows are newer"
                    + " than the slot's catalog_xmin): inserts written meanwhile may be missing"
                    + " from the slot, so the {} pending event(s) are left to the table relay",
                slot.publicationName(),
                slot.slotName(),
                handedOver);
          }
          try (Statement s = c.createStatement();
              ResultSet rs = s.executeQuery(parkedAggregatesSql)) {
            while (rs.next()) {
              parked.add(new ClaimedRow.AggregateKey(rs.getString(1), rs.getString(2)));
            }
          }
          return null;
        });
  }

  private void readAndPublish() throws SQLException, InterruptedException {
    PGReplicationStream current = stream;
    if (completer.backlogRows()
        > Math.min(
            (long) MAX_COMPLETER_BACKLOG_BATCHES * config.batchSize(),
            WalCompleter.MAX_POSITIONS)) {
      applyAck(current);
      schedule(1);
      return;
    }
    long idleUntil = System.nanoTime() + IDLE_SLICE.toNanos();
    // A batch ends at batchSize rows or once its payloads and headers reach maxBatchBytes: the
    // stream hands rows over one at a time (the server spills large transactions to disk past
    // logical_decoding_work_mem), so the reader holds at most the budget plus one event.
    while (running && batch.size() < config.batchSize() && batchBytes < config.maxBatchBytes()) {
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
          if (unseenUntil != 0 && b.finalLsn() >= unseenUntil) {
            checkUnseen();
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
            requireSamePublication();
          }
        }
        case PgOutputDecoder.Insert insert -> {
          ClaimedRow row = rows.row(insert);
          if (row != null) {
            seen(row);
            batch.add(row);
            batchCommitLsns.add(readingCommitLsn);
            batchBytes +=
                row.payload().length() + (row.headers() == null ? 0 : row.headers().length());
            batchWriters.add(readingXid);
          }
        }
        case PgOutputDecoder.LogicalMessage m -> {
          ClaimedRow row = messages == null ? null : messages.row(m);
          if (row != null) {
            batch.add(row);
            batchCommitLsns.add(readingCommitLsn);
            batchBytes += row.payload().length() + row.headers().length();
            batchWriters.add(readingXid);
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
      checkStillStreaming();
    }
    long ackLsn = ackable;
    if (!batch.isEmpty()) {
      List<ClaimedRow> taken = List.copyOf(batch);
      Map<Long, Long> commitLsns = new HashMap<>();
      for (int i = 0; i < taken.size(); i++) {
        commitLsns.put(taken.get(i).position(), batchCommitLsns.get(i));
      }
      Set<Integer> writers = Set.copyOf(batchWriters);
      batch.clear();
      batchCommitLsns.clear();
      batchBytes = 0;
      batchWriters.clear();
      publish(taken, commitLsns, writers, ackLsn);
    } else if (ackLsn > submittedAck) {
      completer.submit(new long[0], Set.of(), ackLsn);
      submittedAck = ackLsn;
    }
    applyAck(current);
    schedule(0);
  }

  /**
   * Every {@link #STREAM_CHECK_EVERY}, while idle: fails (and the reader attaches again) when the
   * slot is no longer streamed by this reader's WAL sender.
   */
  private void checkStillStreaming() throws SQLException {
    long now = System.nanoTime();
    if (now - lastStreamCheck < STREAM_CHECK_EVERY.toNanos()) {
      return;
    }
    lastStreamCheck = now;
    requireOwnStream(slot.readerPid(), "the connection died silently");
    requireSamePublication();
  }

  /** The publication's fingerprint; drift when it does not stream every insert of the table. */
  private String requireIntactPublication() throws SQLException {
    WalSlot.PublicationState state = slot.publicationState();
    if (state == null) {
      throw new PublicationDriftException("publication " + slot.publicationName() + " was dropped");
    }
    if (state.problem() != null) {
      throw new PublicationDriftException(state.problem());
    }
    return state.fingerprint();
  }

  /** Drift unless the publication is as it was when this reader attached. */
  private void requireSamePublication() throws SQLException {
    String now = requireIntactPublication();
    if (!now.equals(publicationBaseline)) {
      throw new PublicationDriftException(
          "publication "
              + slot.publicationName()
              + " was altered, dropped or re-created while the reader streamed it (its catalog"
              + " rows changed): the inserts written meanwhile may have been left out of the slot");
    }
  }

  /**
   * The highest LSN up to {@code wanted} the slot may be confirmed to. Every {@link
   * #PUBLICATION_CHECK_EVERY} the publication is checked; one found unchanged lets the slot move up
   * to what had been received at the check before it. A change committed before an LSN was received
   * is seen by the next check at the latest, even when it became visible a moment after its commit
   * record was written (as a commit waiting for a synchronous standby does).
   */
  private long confirmable(PGReplicationStream current, long wanted) throws SQLException {
    if (wanted > verifiedLsn) {
      long now = System.nanoTime();
      if (now - lastPublicationCheck >= PUBLICATION_CHECK_EVERY.toNanos()) {
        long received = current.getLastReceiveLSN().asLong();
        requireSamePublication();
        lastPublicationCheck = now;
        verifiedLsn = Math.max(verifiedLsn, checkedReceived);
        checkedReceived = received;
      }
    }
    return Math.min(wanted, verifiedLsn);
  }

  /**
   * Notes the pending rows that are not parked (the oldest {@link #UNSEEN_CHECK_LIMIT}), and then
   * the WAL inserted so far: each of them committed before it.
   */
  private void loadUnseen() throws SQLException {
    unseen.clear();
    unseenUntil = 0;
    long until;
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(unseenSql)) {
      ps.setInt(1, UNSEEN_CHECK_LIMIT);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          unseen
              .computeIfAbsent(
                  new ClaimedRow.AggregateKey(rs.getString(2), rs.getString(3)),
                  k -> new java.util.TreeSet<>())
              .add(rs.getLong(1));
        }
      }
      try (Statement s = c.createStatement();
          ResultSet rs = s.executeQuery(WalStatements.WAL_INSERTED_AND_FLUSHED)) {
        rs.next();
        until = rs.getLong(1);
      }
    }
    unseenUntil = unseen.isEmpty() ? 0 : Math.max(1, until);
  }

  /** {@code row} was read from the stream. */
  private void seen(ClaimedRow row) {
    if (unseenUntil == 0) {
      return;
    }
    java.util.TreeSet<Long> positions = unseen.get(row.aggregate());
    if (positions != null && positions.remove(row.position()) && positions.isEmpty()) {
      unseen.remove(row.aggregate());
    }
  }

  /** Whether a row of {@code row}'s aggregate with a lower position is still unseen. */
  private boolean behindUnseen(ClaimedRow row) {
    if (unseenUntil == 0) {
      return false;
    }
    java.util.TreeSet<Long> positions = unseen.get(row.aggregate());
    return positions != null && !positions.isEmpty() && positions.first() < row.position();
  }

  /**
   * The stream has passed every commit before {@link #unseenUntil}: a row noted then and never read
   * that is still pending and not parked was skipped by the slot, whose confirmed position was
   * moved past it by hand. Only the table knows it now: the slot is unusable (see
   * docs/wal-relay.md).
   */
  private void checkUnseen() throws SQLException {
    List<Long> positions = new ArrayList<>();
    unseen.values().forEach(positions::addAll);
    unseen.clear();
    unseenUntil = 0;
    if (positions.isEmpty()) {
      return;
    }
    long skipped;
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(stillUnsettledSql)) {
      ps.setArray(1, c.createArrayOf("int8", positions.toArray(Long[]::new)));
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        skipped = rs.getLong(1);
      }
    }
    if (skipped > 0) {
      throw new SlotSkippedEventsException(
          "replication slot "
              + slot.slotName()
              + " skipped "
              + skipped
              + " pending event(s) committed before its confirmed position, which this relay"
              + " did not confirm (moved by hand, pg_replication_slot_advance?): they are only in"
              + " the table");
    }
  }

  /**
   * Fails (and the reader attaches again) unless {@code pid}, the WAL sender streaming the slot
   * now, is this reader's; {@code consequence} ends the message.
   */
  private void requireOwnStream(@Nullable Integer pid, String consequence) throws SQLException {
    if (pid == null || pid != streamPid) {
      throw new SQLException(
          "the server no longer streams replication slot "
              + slot.slotName()
              + " to this reader (its WAL sender "
              + streamPid
              + " is gone"
              + (pid == null ? "" : ", process " + pid + " streams it")
              + "): "
              + consequence);
    }
  }

  /** With nothing in flight and no transaction half read, the slot may move to what was read. */
  private void confirmWhileIdle(PGReplicationStream current) throws SQLException {
    if (unseenUntil != 0 && !inTransaction && current.getLastReceiveLSN().asLong() >= unseenUntil) {
      checkUnseen();
    }
    if (!inTransaction
        && batch.isEmpty()
        && completer.backlog() == 0
        && completer.confirmedLsn() >= submittedAck) {
      long received = confirmable(current, current.getLastReceiveLSN().asLong());
      if (received > sentAck) {
        setAck(current, received);
      }
    } else {
      applyAck(current);
    }
  }

  private void applyAck(PGReplicationStream current) throws SQLException {
    long confirmed = confirmable(current, completer.confirmedLsn());
    if (confirmed > sentAck) {
      setAck(current, confirmed);
    }
  }

  private void setAck(PGReplicationStream current, long lsn) {
    LogSequenceNumber value = LogSequenceNumber.valueOf(lsn);
    current.setFlushedLSN(value);
    current.setAppliedLSN(value);
    sentAck = lsn;
  }

  private void publish(
      List<ClaimedRow> rowsRead, Map<Long, Long> commitLsns, Set<Integer> writers, long ackLsn)
      throws SQLException, InterruptedException {
    long started = System.nanoTime();
    Set<ClaimedRow.AggregateKey> stillParked = stillParked(rowsRead);
    List<Long> park = new ArrayList<>();
    List<Marker.Failure> failures = new ArrayList<>();
    List<EventFailure> failureReports = new ArrayList<>();
    Set<ClaimedRow.AggregateKey> stopped = new LinkedHashSet<>();
    List<OutboxMessage> messages = new ArrayList<>(rowsRead.size());
    List<ClaimedRow> messageRows = new ArrayList<>(rowsRead.size());
    for (ClaimedRow row : rowsRead) {
      if (stillParked.contains(row.aggregate()) || stopped.contains(row.aggregate())) {
        park.add(row.position());
        continue;
      }
      if (behindUnseen(row)) {
        // An older row of its aggregate, pending when the stream attached, has not been read:
        // committed later (with writers not serialized), or skipped by the slot. Handed to the
        // drainer, which follows the commit order, or after a fall-back the position order.
        park.add(row.position());
        stopped.add(row.aggregate());
        continue;
      }
      if (!row.due()) {
        // Born dead, parked or waiting for a retry (written by hand): the drainer's, and its
        // aggregate waits behind it as in the table.
        park.add(row.position());
        stopped.add(row.aggregate());
        continue;
      }
      switch (MessageMapper.toMessage(row)) {
        case MessageMapper.Usable(OutboxMessage message) -> {
          messages.add(message);
          messageRows.add(row);
        }
        case MessageMapper.Unusable(String reason) -> {
          fail(
              row,
              MessageMapper.forReport(row),
              "unusable row: " + reason,
              true,
              null,
              failures,
              failureReports);
          park.add(row.position());
          stopped.add(row.aggregate());
        }
      }
    }
    long[] published = new long[messages.size()];
    int publishedCount = 0;
    List<OutboxMessage> publishedMessages = new ArrayList<>(messages.size());
    if (!messages.isEmpty()) {
      TracedBatch traced = TracedBatch.start(tracing, messages, publisher, log);
      try {
        PublishCall.Answers answers =
            PublishCall.publish(publisher, traced.messages(), config.publishTimeout(), log);
        if (Thread.currentThread().isInterrupted()) {
          throw new InterruptedException("interrupted while publishing");
        }
        for (int i = 0; i < messages.size(); i++) {
          OutboxMessage message = messages.get(i);
          ClaimedRow row = messageRows.get(i);
          PublishResult result = answers.results().get(i);
          boolean isStopped = stopped.contains(row.aggregate());
          if (result instanceof PublishResult.Published) {
            if (isStopped) {
              log.errorEvent(
                  message,
                  "Order violation by publisher {}: it reported this event published after an"
                      + " earlier event of its aggregate failed or went unanswered in the same"
                      + " batch",
                  publisher.getClass().getName());
              listener.onOrderViolation(message);
            }
            if (!WalMessages.fromMessage(row)) { // a delivered message has no row to complete
              published[publishedCount++] = row.position();
            }
            publishedMessages.add(message);
            traced.published(i, result);
          } else if (isStopped) {
            park.add(row.position());
            traced.heldBack(i);
          } else {
            EventFailure failure =
                switch (result) {
                  case null ->
                      fail(
                          row,
                          message,
                          answers.unansweredReason(),
                          false,
                          null,
                          failures,
                          failureReports);
                  case PublishResult.Permanent p ->
                      fail(row, message, p.reason(), true, null, failures, failureReports);
                  case PublishResult.Retryable r ->
                      fail(
                          row,
                          message,
                          r.reason(),
                          false,
                          r.retryAfter(),
                          failures,
                          failureReports);
                  case PublishResult.Published p -> throw new IllegalStateException("published");
                };
            traced.failed(i, failure, result instanceof PublishResult.Permanent);
            park.add(row.position());
            stopped.add(row.aggregate());
          }
        }
      } finally {
        traced.end();
      }
    }
    if (!park.isEmpty()) {
      recordParking(failures, park, commitLsns, writers, WalMessages.parked(rowsRead, park));
      parked.addAll(stopped);
    }
    completer.submit(
        publishedCount == published.length
            ? published
            : java.util.Arrays.copyOf(published, publishedCount),
        writers,
        ackLsn);
    submittedAck = Math.max(submittedAck, ackLsn);
    report(
        rowsRead.size(), publishedMessages, failureReports, park.size() - failures.size(), started);
  }

  /** The aggregates of {@code rowsRead} that are parked and still have a pending parked row. */
  private Set<ClaimedRow.AggregateKey> stillParked(List<ClaimedRow> rowsRead) throws SQLException {
    Set<ClaimedRow.AggregateKey> candidates = new LinkedHashSet<>();
    for (ClaimedRow row : rowsRead) {
      if (parked.contains(row.aggregate())) {
        candidates.add(row.aggregate());
      }
    }
    if (candidates.isEmpty()) {
      return Set.of();
    }
    Set<ClaimedRow.AggregateKey> still = new HashSet<>();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(stillParkedSql)) {
      Array types =
          c.createArrayOf("text", candidates.stream().map(ClaimedRow.AggregateKey::type).toArray());
      Array ids =
          c.createArrayOf("text", candidates.stream().map(ClaimedRow.AggregateKey::id).toArray());
      ps.setArray(1, types);
      ps.setArray(2, ids);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          still.add(new ClaimedRow.AggregateKey(rs.getString(1), rs.getString(2)));
        }
      }
    }
    // Nothing of theirs is pending in the drainer's hands: back to the fast path.
    for (ClaimedRow.AggregateKey key : candidates) {
      if (!still.contains(key)) {
        parked.remove(key);
      }
    }
    return still;
  }

  private EventFailure fail(
      ClaimedRow row,
      OutboxMessage message,
      String reason,
      boolean permanent,
      @Nullable Duration hint,
      List<Marker.Failure> failures,
      List<EventFailure> reports) {
    int attempts = MessageMapper.nextAttempt(row.attempts());
    boolean dead = permanent || attempts >= config.maxAttempts();
    Duration retryIn = dead ? Duration.ZERO : FailureRules.retryDelay(config, attempts, hint);
    String stored = FailureRules.storedReason(reason, config.lastErrorMaxLength());
    failures.add(new Marker.Failure(row.id(), attempts, stored, dead, retryIn));
    EventFailure failure = new EventFailure(message, stored, attempts, dead, retryIn);
    reports.add(failure);
    return failure;
  }

  /**
   * Records the failures as the table relay does and flags them and the held rows parked, behind
   * the parking fence taken shared, and only while this reader's WAL sender still streams the slot.
   * A reader whose stream died may not park any more: the next one has read, or will read, these
   * events again and, not knowing them parked, would publish them while the drainer did too.
   */
  private void recordParking(
      List<Marker.Failure> failures,
      List<Long> positions,
      Map<Long, Long> commitLsns,
      Set<Integer> writers,
      List<ClaimedRow> parkedMessages)
      throws SQLException {
    inWriteTransaction(
        c -> {
          CommittingWriters.awaitVisible(c, writers);
          slot.fence(c, false);
          requireOwnStream(
              slot.readerPid(c),
              "the failures of its last batch are left to the reader that streams it now");
          if (messages != null) {
            // Their rows first: the failures below are recorded on them by id.
            messages.park(c, parkedMessages, commitLsns);
          }
          marker.failed(DSL.using(c, SQLDialect.POSTGRES, settings), failures);
          try (PreparedStatement ps =
              c.prepareStatement(messages != null ? messages.reparkSql() : parkSql)) {
            ps.setArray(1, c.createArrayOf("int8", positions.toArray(Long[]::new)));
            ps.setArray(
                2,
                c.createArrayOf(
                    "int8", positions.stream().map(commitLsns::get).toArray(Long[]::new)));
            ps.executeUpdate();
          }
          return null;
        });
  }

  /**
   * Runs {@code work} in a write transaction of its own on a pool connection, with the relay's
   * timeouts (a partition cannot leave its locks held) and a synchronous commit: the slot may move
   * past a parked row only once its flag is on disk.
   */
  private void inWriteTransaction(Sql.TransactionWork<Void> work) throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      Sql.inWriteTransaction(c, Sql.applicationName(log.relayName()) + "-wal", true, work);
    }
  }

  private void report(
      int read,
      List<OutboxMessage> publishedMessages,
      List<EventFailure> failures,
      int heldBack,
      long started) {
    Instant now = config.clock().instant();
    for (OutboxMessage message : publishedMessages) {
      listener.onPublished(message, Duration.between(message.createdAt(), now));
    }
    int dead = 0;
    for (EventFailure failure : failures) {
      if (failure.dead()) {
        dead++;
        log.errorEvent(
            failure.message(),
            "Event dead-lettered after {} attempt(s): {}",
            failure.attempts(),
            failure.reason());
      } else {
        log.warnEvent(
            failure.message(),
            "Publish failed (attempt {}), parked for the table relay, retrying in {}: {}",
            failure.attempts(),
            failure.retryIn(),
            failure.reason());
      }
      listener.onFailed(failure);
    }
    listener.onBatch(
        new BatchReport(
            read,
            publishedMessages.size(),
            failures.size() - dead,
            dead,
            heldBack,
            Duration.ofNanos(System.nanoTime() - started)));
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
      batchCommitLsns.clear();
      batchBytes = 0;
      batchWriters.clear();
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
   * The publication no longer streams every insert of the outbox table whole, or changed while the
   * reader streamed it: the slot may have skipped events, which only the table still knows.
   */
  private static final class PublicationDriftException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    PublicationDriftException(String message) {
      super(message);
    }
  }

  /** The slot skipped events that are still pending: no reader may resume it. */
  private static final class SlotSkippedEventsException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    SlotSkippedEventsException(String message) {
      super(message);
    }
  }

  /** The slot cannot be streamed any more: dropped or invalidated. */
  private static final class SlotLostException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The WAL inserted before the slot was last seen gone or invalidated. */
    final long walBefore;

    SlotLostException(String message, long walBefore) {
      super(message);
      this.walBefore = walBefore;
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

package dev.pgoutbox.relay.wal;

import dev.pgoutbox.relay.Completion;
import dev.pgoutbox.relay.internal.MarkStatements;
import dev.pgoutbox.relay.internal.RelayLog;
import dev.pgoutbox.relay.internal.RenderedStatement;
import dev.pgoutbox.relay.internal.Sql;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Completes the rows the WAL reader published, in bulk and off its path: one {@code UPDATE} (or
 * {@code DELETE}) {@code WHERE position = ANY(?)} for everything queued, in a task of its own on
 * the executor. Work is done in the order it was queued, and only once it committed, and its commit
 * is on disk, does the LSN it carries become {@link #confirmedLsn()}, the position the reader may
 * confirm to the slot: a crash before then leaves the rows pending and the slot behind them, so
 * they are read again.
 *
 * <p>With {@code synchronousCommit} off a commit returns before its record is on disk, and a server
 * crash in the next moments undoes it: had the slot been confirmed past its rows meanwhile (and
 * saved, which PostgreSQL does as soon as the slot's restart point moves), they would stay pending
 * for good, never streamed again, and a later failure of their aggregate would wait behind them
 * forever. So an asynchronous completion's LSN is held until the WAL on disk ({@code
 * pg_current_wal_flush_lsn()}) reaches the WAL inserted when it committed; the completer looks
 * again every {@link #DURABILITY_RECHECK} while it holds one (the WAL writer flushes within {@code
 * wal_writer_delay}, 200 ms by default).
 */
final class WalCompleter implements Runnable {

  /** Most positions one statement completes. */
  static final int MAX_POSITIONS = 50_000;

  private static final Duration INITIAL_ERROR_BACKOFF = Duration.ofMillis(100);

  /** How often the completer asks whether held asynchronous completions are on disk yet. */
  static final Duration DURABILITY_RECHECK = Duration.ofMillis(20);

  /**
   * An LSN settled once the WAL on disk reaches {@code flushNeeded} (0: at once, in its turn): the
   * end of the WAL inserted when its completion committed asynchronously.
   */
  private record Held(long flushNeeded, long ackLsn) {}

  /**
   * Rows to complete, the transactions that wrote them ({@link CommittingWriters}), and the LSN
   * that is settled once they are.
   */
  record Work(long[] positions, Set<Integer> writers, long ackLsn) {}

  private final ScheduledExecutorService executor;
  private final DataSource dataSource;
  private final RenderedStatement statement;
  private final boolean synchronousCommit;
  private final String applicationName;
  private final Duration errorBackoffMax;
  private final RelayLog log;
  private final ConcurrentLinkedQueue<Work> queue = new ConcurrentLinkedQueue<>();
  private final AtomicInteger queued = new AtomicInteger();
  private final AtomicLong queuedRows = new AtomicLong();
  private final AtomicBoolean scheduled = new AtomicBoolean();
  private final AtomicLong confirmedLsn = new AtomicLong();
  private final AtomicLong completed = new AtomicLong();
  private volatile boolean stopped;
  private @Nullable List<Work> retrying;

  /** Committed work whose LSN waits for its commit to be on disk, in order; the task's alone. */
  private final ArrayDeque<Held> held = new ArrayDeque<>();

  private Duration errorBackoff = INITIAL_ERROR_BACKOFF;

  WalCompleter(
      ScheduledExecutorService executor,
      DataSource dataSource,
      String schema,
      Completion completion,
      boolean synchronousCommit,
      String applicationName,
      Duration errorBackoffMax,
      RelayLog log) {
    this.executor = executor;
    this.dataSource = dataSource;
    this.statement =
        completion == Completion.DELETE
            ? MarkStatements.deleted(schema)
            : MarkStatements.published(schema);
    this.synchronousCommit = synchronousCommit;
    this.applicationName = applicationName;
    this.errorBackoffMax = errorBackoffMax;
    this.log = log;
  }

  /**
   * Queues rows to complete, written by the transactions {@code writers} (a set that no longer
   * changes); {@code ackLsn} is settled once they (and all before) are.
   */
  void submit(long[] positions, Set<Integer> writers, long ackLsn) {
    queue.add(new Work(positions, writers, ackLsn));
    queued.incrementAndGet();
    queuedRows.addAndGet(positions.length);
    schedule(0);
  }

  /** Work items queued and not yet committed. */
  int backlog() {
    return queued.get();
  }

  /** Rows queued in work not yet committed: what a crash now would publish again. */
  long backlogRows() {
    return queuedRows.get();
  }

  /** The highest LSN whose work committed; 0 before any. */
  long confirmedLsn() {
    return confirmedLsn.get();
  }

  /** Rows completed so far (marked or deleted; replays of completed rows count nothing). */
  long completed() {
    return completed.get();
  }

  /** Stops taking the executor; queued work is left (its rows stay pending, the slot behind). */
  void stop() {
    stopped = true;
  }

  private void schedule(long delayMillis) {
    if (stopped || !scheduled.compareAndSet(false, true)) {
      return;
    }
    try {
      executor.schedule(this, delayMillis, TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException e) {
      scheduled.set(false);
    }
  }

  @Override
  public void run() {
    try {
      boolean looked = false;
      while (!stopped) {
        List<Work> work = retrying != null ? retrying : take();
        if (work.isEmpty()) {
          break;
        }
        retrying = work;
        long[] done = complete(work);
        retrying = null;
        errorBackoff = INITIAL_ERROR_BACKOFF;
        queued.addAndGet(-work.size());
        queuedRows.addAndGet(-done[0]);
        long ackLsn = work.get(work.size() - 1).ackLsn();
        if (done[1] == 0 && held.isEmpty()) {
          confirmedLsn.accumulateAndGet(ackLsn, Math::max);
        } else {
          held.add(new Held(done[1], ackLsn));
          release(done[2]);
          looked |= done[1] != 0;
        }
      }
      if (!stopped && !looked && !held.isEmpty()) {
        release(flushedLsn());
      }
      scheduled.set(false);
      if (!queue.isEmpty()) {
        schedule(0);
      } else if (!held.isEmpty()) {
        schedule(DURABILITY_RECHECK.toMillis());
      }
    } catch (SQLException | RuntimeException e) {
      Duration backoff = errorBackoff;
      errorBackoff =
          errorBackoff.multipliedBy(2).compareTo(errorBackoffMax) > 0
              ? errorBackoffMax
              : errorBackoff.multipliedBy(2);
      log.warn("Completing published rows failed, retrying in {}: {}", backoff, e.toString());
      scheduled.set(false);
      schedule(backoff.toMillis());
    }
  }

  private List<Work> take() {
    List<Work> work = new ArrayList<>();
    int positions = 0;
    Work next;
    while (positions < MAX_POSITIONS && (next = queue.poll()) != null) {
      work.add(next);
      positions += next.positions().length;
    }
    return work;
  }

  /**
   * Settles the held LSNs whose completions are on disk, the WAL being flushed to {@code flushed}.
   */
  private void release(long flushed) {
    Held next;
    while ((next = held.peek()) != null && next.flushNeeded() <= flushed) {
      held.poll();
      confirmedLsn.accumulateAndGet(next.ackLsn(), Math::max);
    }
  }

  /** The end of the WAL on disk. */
  private long flushedLsn() throws SQLException {
    try (Connection connection = dataSource.getConnection();
        Statement s = connection.createStatement();
        ResultSet rs = s.executeQuery(WalStatements.WAL_FLUSHED)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /**
   * Completes the rows of {@code work} in one transaction; returns how many rows it held, and after
   * an asynchronous commit the end of the WAL inserted then (its commit record is within it) and of
   * the WAL on disk (0 and 0 after a synchronous one, or when there was nothing to complete).
   */
  private long[] complete(List<Work> work) throws SQLException {
    int count = work.stream().mapToInt(w -> w.positions().length).sum();
    if (count == 0) {
      return new long[] {0, 0, 0};
    }
    Long[] all = new Long[count];
    Set<Integer> writers = new HashSet<>();
    int i = 0;
    for (Work w : work) {
      for (long p : w.positions()) {
        all[i++] = p;
      }
      writers.addAll(w.writers());
    }
    try (Connection connection = dataSource.getConnection()) {
      Sql.inWriteTransaction(
          connection,
          applicationName,
          synchronousCommit,
          c -> {
            CommittingWriters.awaitVisible(c, writers);
            try (PreparedStatement ps = MarkStatements.prepare(c, statement)) {
              Array array = c.createArrayOf("int8", all);
              try {
                ps.setArray(MarkStatements.PUBLISHED_POSITIONS, array);
                completed.addAndGet(ps.executeUpdate());
              } finally {
                array.free();
              }
            }
            return null;
          });
      if (synchronousCommit) {
        return new long[] {count, 0, 0};
      }
      try (Statement s = connection.createStatement();
          ResultSet rs = s.executeQuery(WalStatements.WAL_INSERTED_AND_FLUSHED)) {
        rs.next();
        return new long[] {count, rs.getLong(1), rs.getLong(2)};
      }
    }
  }
}

package dev.pgoutbox.relay.internal;

import dev.pgoutbox.relay.Completion;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
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
 * the executor. Work is done in the order it was queued, and only once it committed does the LSN it
 * carries become {@link #confirmedLsn()}, the position the reader may confirm to the slot: a crash
 * before the commit leaves the rows pending and the slot behind them, so they are read again.
 */
final class WalCompleter implements Runnable {

  /** Most positions one statement completes. */
  static final int MAX_POSITIONS = 50_000;

  private static final Duration INITIAL_ERROR_BACKOFF = Duration.ofMillis(100);

  /**
   * Rows to complete, the transactions that wrote them ({@link CommittingWriters}), and the LSN
   * that is settled once they are.
   */
  record Work(long[] positions, Set<Integer> writers, long ackLsn) {}

  private final ScheduledExecutorService executor;
  private final DataSource dataSource;
  private final String sql;
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
    this.sql =
        (completion == Completion.DELETE
                ? MarkStatements.deleted(schema)
                : MarkStatements.published(schema))
            .sql();
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
      while (!stopped) {
        List<Work> work = retrying != null ? retrying : take();
        if (work.isEmpty()) {
          break;
        }
        retrying = work;
        int rows = complete(work);
        retrying = null;
        errorBackoff = INITIAL_ERROR_BACKOFF;
        queued.addAndGet(-work.size());
        queuedRows.addAndGet(-rows);
        confirmedLsn.accumulateAndGet(work.get(work.size() - 1).ackLsn(), Math::max);
      }
      scheduled.set(false);
      if (!queue.isEmpty()) {
        schedule(0);
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

  /** Completes the rows of {@code work} in one transaction; returns how many rows it held. */
  private int complete(List<Work> work) throws SQLException {
    int count = work.stream().mapToInt(w -> w.positions().length).sum();
    if (count == 0) {
      return 0;
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
            try (PreparedStatement ps = c.prepareStatement(sql)) {
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
    }
    return count;
  }
}

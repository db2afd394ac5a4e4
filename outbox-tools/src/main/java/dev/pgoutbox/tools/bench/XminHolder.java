package dev.pgoutbox.tools.bench;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;

/**
 * Holds PostgreSQL's xmin horizon back during each {@link HoldWindow}: a session of its own runs
 * {@code BEGIN; SELECT txid_current();} (a real xid, so the horizon stops at it) and stays idle in
 * that transaction until the window closes, as a forgotten session or a long report would.
 */
final class XminHolder implements AutoCloseable {

  /** What one window did: when the transaction really opened and closed, and its xid. */
  record Held(HoldWindow window, double openedAtSeconds, double closedAtSeconds, long xid) {
    Map<String, Object> toMap() {
      Map<String, Object> map = new LinkedHashMap<>();
      map.put("start_s", window.startSeconds());
      map.put("seconds", window.seconds());
      map.put("opened_at_s", Result.round(openedAtSeconds, 3));
      map.put("closed_at_s", Result.round(closedAtSeconds, 3));
      map.put("xid", xid);
      return map;
    }
  }

  private final Thread thread;
  private final List<Held> held = new ArrayList<>();
  private volatile boolean closing;
  private volatile @Nullable Exception failure;

  private XminHolder(BenchDatabase db, List<HoldWindow> windows, long startNanos) {
    this.thread =
        Thread.ofPlatform()
            .name("soak-xmin-holder")
            .daemon()
            .start(() -> run(db, windows, startNanos));
  }

  /** Starts holding at each window's start, counted from {@code startNanos}. */
  static XminHolder start(BenchDatabase db, List<HoldWindow> windows, long startNanos) {
    return new XminHolder(db, windows, startNanos);
  }

  private void run(BenchDatabase db, List<HoldWindow> windows, long startNanos) {
    try {
      for (HoldWindow window : windows) {
        if (!sleepUntil(startNanos + TimeUnit.SECONDS.toNanos(window.startSeconds()))) {
          return;
        }
        try (Connection connection = db.connect()) {
          connection.setAutoCommit(false);
          long xid;
          try (Statement statement = connection.createStatement();
              ResultSet rs = statement.executeQuery("SELECT txid_current()")) {
            rs.next();
            xid = rs.getLong(1);
          }
          double opened = (System.nanoTime() - startNanos) / 1e9;
          sleepUntil(startNanos + TimeUnit.SECONDS.toNanos(window.endSeconds()));
          connection.rollback();
          double closed = (System.nanoTime() - startNanos) / 1e9;
          synchronized (held) {
            held.add(new Held(window, opened, closed, xid));
          }
        }
      }
    } catch (Exception e) {
      failure = e;
    }
  }

  /** Sleeps until {@code deadline}; false if closing. */
  private boolean sleepUntil(long deadline) {
    for (long left = deadline - System.nanoTime();
        left > 0 && !closing;
        left = deadline - System.nanoTime()) {
      LockSupport.parkNanos(Math.min(left, TimeUnit.MILLISECONDS.toNanos(100)));
    }
    return !closing;
  }

  /** The windows held so far. */
  List<Held> held() {
    synchronized (held) {
      return List.copyOf(held);
    }
  }

  /** Ends the transaction held now, if any, and stops; throws what the holder met, if anything. */
  @Override
  public void close() {
    closing = true;
    try {
      thread.join(TimeUnit.SECONDS.toMillis(30));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    Exception failure = this.failure;
    if (failure != null) {
      throw new IllegalStateException("--hold-xmin session failed: " + failure, failure);
    }
  }
}

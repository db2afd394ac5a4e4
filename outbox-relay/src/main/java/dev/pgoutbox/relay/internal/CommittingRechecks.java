package dev.pgoutbox.relay.internal;

import java.time.Duration;

/**
 * How soon a relay claims again while a writer is committing silently (see {@link
 * NotificationWaiter#writersCommitting}): within {@link #QUICK} (a commit takes about one disk
 * flush) for up to {@link #QUICK_RECHECKS} claims in a row that find nothing, then twice as long
 * each time up to {@link #LONGEST}, because a host that made the trigger immediate holds its lock
 * until its transaction ends. Doubling from the first empty claim would leave a silent writer that
 * finishes a few flushes later 16-50 ms behind. A claim that finds events starts over.
 */
final class CommittingRechecks {

  static final long QUICK = Duration.ofMillis(1).toNanos();
  static final int QUICK_RECHECKS = 20;
  static final long LONGEST = Duration.ofMillis(50).toNanos();

  private int emptyInARow;

  /** The delay before the next claim, after a claim of {@code claimed} events. */
  long next(int claimed) {
    emptyInARow = claimed > 0 ? 0 : emptyInARow + 1;
    int doublings = Math.min(Math.max(0, emptyInARow - QUICK_RECHECKS), 16);
    return Math.min(QUICK << doublings, LONGEST);
  }

  /** No writer is committing: the next recheck starts over. */
  void reset() {
    emptyInARow = 0;
  }
}

package dev.pgoutbox.relay.internal;

import dev.pgoutbox.relay.RelayListener;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * The relay's work as a chain of short tasks on the host's executor: drain while batches come back
 * full, then wait for a notification (on this thread, at most {@link #WAIT_SLICE} at a time) or
 * sleep until the next poll (as a scheduled task, holding no thread). While a writer is committing
 * without a notification of its own, the next claim comes within milliseconds instead of at the
 * next poll. Exactly one task of the chain is queued or running at any time. Database errors back
 * off exponentially and resume.
 */
public final class RelayLoop implements Runnable {

  /** Longest single wait for a notification, so that stop() is answered promptly. */
  static final Duration WAIT_SLICE = Duration.ofMillis(250);

  /** Longest stretch of back-to-back full batches before yielding the thread to other tasks. */
  private static final long DRAIN_SLICE_NANOS = Duration.ofSeconds(1).toNanos();

  private static final Duration INITIAL_ERROR_BACKOFF = Duration.ofMillis(100);

  private final ScheduledExecutorService executor;
  private final BatchRunner runner;
  private final @Nullable NotificationWaiter waiter;
  private final int batchSize;
  private final Duration pollInterval;
  private final Duration errorBackoffMax;
  private final RelayListener listener;
  private final RelayLog log;
  private final CountDownLatch finished = new CountDownLatch(1);

  private volatile boolean running;
  private volatile @Nullable Thread worker;
  private @Nullable ScheduledFuture<?> scheduled;
  // A running task's future still cancels "successfully": only cancel one that has not started.
  private boolean taskRunning;
  private boolean wokenUp = true;
  private long nextPollNanos = System.nanoTime();
  private Duration errorBackoff = INITIAL_ERROR_BACKOFF;
  private final CommittingRechecks rechecks = new CommittingRechecks();

  /** A loop; {@link #start()} submits its first task. */
  public RelayLoop(
      ScheduledExecutorService executor,
      BatchRunner runner,
      @Nullable NotificationWaiter waiter,
      int batchSize,
      Duration pollInterval,
      Duration errorBackoffMax,
      RelayListener listener,
      RelayLog log) {
    this.executor = executor;
    this.runner = runner;
    this.waiter = waiter;
    this.batchSize = batchSize;
    this.pollInterval = pollInterval;
    this.errorBackoffMax = errorBackoffMax;
    this.listener = listener;
    this.log = log;
  }

  /** Submits the first task. */
  public synchronized void start() {
    running = true;
    scheduleNext(0);
  }

  @Override
  public void run() {
    synchronized (this) {
      if (!running) {
        finish();
        return;
      }
      taskRunning = true;
    }
    worker = Thread.currentThread();
    try {
      step();
    } finally {
      worker = null;
      synchronized (this) {
        taskRunning = false;
      }
    }
  }

  private void step() {
    if (!running) {
      finish();
      return;
    }
    try {
      if (wokenUp || System.nanoTime() - nextPollNanos >= 0) {
        wokenUp = false;
        // Asked before the claim, so that writers who committed silently are visible to it.
        boolean claimAgainSoon = waiter != null && waiter.writersCommitting();
        long sliceEnd = System.nanoTime() + DRAIN_SLICE_NANOS;
        int claimed;
        boolean moreWaiting;
        do {
          if (waiter != null) {
            runner.committedFrom(waiter.takeLowestAnnounced());
          }
          claimed = runner.runOnce();
          if (claimed >= batchSize && waiter != null && waiter.drain() > 0) {
            // Going on at once anyway: read what writers announced meanwhile so it cannot pile up.
            // After a short batch they are left for the wait, which then returns at once. Writers
            // that committed silently beside these announcers need one more look.
            claimAgainSoon = true;
          }
          // A short batch cut by the claim's own bounds (heads asked for, events read behind each)
          // leaves the rest pending, and no notification will come for them.
          moreWaiting = claimed >= batchSize || (claimed > 0 && runner.claimMayHaveLeftEvents());
        } while (running && moreWaiting && System.nanoTime() - sliceEnd < 0);
        errorBackoff = INITIAL_ERROR_BACKOFF;
        if (moreWaiting) {
          // More is waiting: go on at once, but let the executor's other tasks run first.
          wokenUp = true;
          scheduleNext(0);
          return;
        }
        long untilNextClaim = pollInterval.toNanos();
        if (claimAgainSoon) {
          untilNextClaim = Math.min(rechecks.next(claimed), untilNextClaim);
        } else {
          rechecks.reset();
        }
        nextPollNanos = System.nanoTime() + untilNextClaim;
      }
      long untilPoll = Math.max(0, nextPollNanos - System.nanoTime());
      // A wait for notifications lasts at least 2 ms (see NotificationWaiter#await): a quicker
      // recheck for a committing writer sleeps instead, and reads notifications at the next wait.
      if (waiter != null && running && untilPoll >= NotificationWaiter.SHORTEST_WAIT.toNanos()) {
        wokenUp = waiter.await(Duration.ofNanos(Math.min(untilPoll, WAIT_SLICE.toNanos())));
        scheduleNext(0);
      } else {
        scheduleNext(untilPoll);
      }
    } catch (InterruptedException e) {
      // stop() gave up waiting for the batch in flight: it was rolled back, nothing is lost.
      log.warn("Interrupted; the batch in flight was rolled back");
      finish();
    } catch (Exception e) {
      Duration backoff = errorBackoff;
      errorBackoff =
          errorBackoff.multipliedBy(2).compareTo(errorBackoffMax) > 0
              ? errorBackoffMax
              : errorBackoff.multipliedBy(2);
      log.warn("Database or publish cycle failed, retrying in {}: {}", backoff, describe(e));
      listener.onDatabaseError(e, backoff);
      wokenUp = true;
      scheduleNext(backoff.toNanos());
    } catch (Error e) {
      log.error("Stopped by {}", e.toString());
      running = false;
      finish();
      throw e;
    }
  }

  private synchronized void scheduleNext(long delayNanos) {
    if (!running) {
      finish();
      return;
    }
    try {
      scheduled = executor.schedule(this, delayNanos, TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      log.error("The executor refused the relay's next task (shut down?); the relay stops");
      running = false;
      finish();
    }
  }

  /**
   * Asks the loop to stop and waits up to {@code timeout} for the batch in flight to finish. If it
   * does not, the batch is interrupted and rolled back (its events stay pending).
   *
   * @return true when the loop ended within the timeout
   */
  public boolean stop(Duration timeout) throws InterruptedException {
    synchronized (this) {
      running = false;
      if (!taskRunning && scheduled != null && scheduled.cancel(false)) {
        finish();
      }
    }
    if (finished.await(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      return true;
    }
    Thread current = worker;
    if (current != null) {
      current.interrupt();
    }
    boolean ended = finished.await(5, TimeUnit.SECONDS);
    log.warn(
        "Stop timed out after {}; the batch in flight was interrupted (ended: {})", timeout, ended);
    return false;
  }

  /** Whether the loop is running (started and not stopped). */
  public boolean isRunning() {
    return running && finished.getCount() > 0;
  }

  private void finish() {
    if (finished.getCount() > 0) {
      if (waiter != null) {
        waiter.close();
      }
      finished.countDown();
    }
  }

  private static String describe(Exception e) {
    Throwable cause = e;
    StringBuilder out = new StringBuilder(e.toString());
    while (cause.getCause() != null && cause.getCause() != cause && out.length() < 500) {
      cause = cause.getCause();
      out.append(" <- ").append(cause);
    }
    return out.toString();
  }
}

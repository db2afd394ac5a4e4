package dev.pgoutbox.core.internal;

import static java.util.Objects.requireNonNull;

import java.time.Duration;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.slf4j.Logger;

/**
 * The one retention rule of {@code OutboxAdmin} and {@code Inbox}: argument checks, and a purge run
 * on the host's executor that logs and retries on failure.
 */
public final class Retention {

  /** Largest {@code batchSize} of a purge. */
  public static final int MAX_PURGE_BATCH_SIZE = 100_000;

  private Retention() {}

  /** Throws {@link IllegalArgumentException} naming the argument and its bound. */
  public static void requirePurgeArguments(Duration olderThan, int batchSize) {
    requireNonNull(olderThan, "olderThan must not be null");
    if (olderThan.isNegative()) {
      throw new IllegalArgumentException("olderThan must not be negative, was " + olderThan);
    }
    if (batchSize < 1 || batchSize > MAX_PURGE_BATCH_SIZE) {
      throw new IllegalArgumentException(
          "batchSize must be between 1 and " + MAX_PURGE_BATCH_SIZE + ", was " + batchSize);
    }
  }

  /**
   * Runs {@code purge} every {@code every} with a fixed delay; a failure is logged as a warning and
   * the next run tries again.
   *
   * @param log the caller's logger
   * @param prefix the start of each line, e.g. {@code pgoutbox-admin[orders]}
   * @param what what is purged, e.g. {@code processed events}
   */
  public static ScheduledFuture<?> schedule(
      ScheduledExecutorService executor,
      Duration every,
      Duration olderThan,
      int batchSize,
      LongSupplier purge,
      Logger log,
      String prefix,
      String what) {
    requireNonNull(executor, "executor must not be null");
    requireNonNull(every, "every must not be null");
    if (every.isNegative() || every.isZero()) {
      throw new IllegalArgumentException("every must be positive, was " + every);
    }
    requirePurgeArguments(olderThan, batchSize);
    return executor.scheduleWithFixedDelay(
        () -> {
          try {
            long purged = purge.getAsLong();
            if (purged > 0) {
              log.info(
                  "{} - Retention purged {} {} older than {}", prefix, purged, what, olderThan);
            }
          } catch (RuntimeException e) {
            log.warn("{} - Retention failed, will retry: {}", prefix, e.toString());
          }
        },
        every.toMillis(),
        every.toMillis(),
        TimeUnit.MILLISECONDS);
  }
}

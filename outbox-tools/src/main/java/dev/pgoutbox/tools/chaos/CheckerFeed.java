package dev.pgoutbox.tools.chaos;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.jspecify.annotations.Nullable;

/**
 * The checker's own consumer on a chaos broker, feeding the {@link
 * dev.pgoutbox.testing.DeliveryChecker}. It answers one question the checker cannot: did it read
 * everything the broker holds? An event the checker never saw counts as {@code lost} only when the
 * answer is yes; otherwise the run ends with a checker error, never a loss.
 */
interface CheckerFeed extends AutoCloseable {

  /**
   * Null when the checker has read everything the broker holds now (waiting up to {@code grace} for
   * it to catch up); else why it could not (subscription or stream gone, reads failing, the broker
   * unreachable for the question, or still behind after {@code grace}).
   */
  @Nullable String readError(Duration grace) throws InterruptedException;

  /** Whether reading has failed for good: waiting longer for events is pointless. */
  boolean failed();

  /** Stops reading and lets go of the broker; keeps the interrupt flag if interrupted. */
  @Override
  void close();

  /** Figures for the report about the feed itself, e.g. connections it had to replace. */
  default Map<String, Object> figures() {
    return Map.of();
  }

  /** The first reason a feed could not read, kept for the verdict. Thread-safe. */
  final class Failure {
    private final AtomicReference<@Nullable String> reason = new AtomicReference<>();

    /** Records {@code why} unless a reason was recorded before. */
    void set(String why) {
      reason.compareAndSet(null, why);
    }

    @Nullable String get() {
      return reason.get();
    }
  }

  /** Polls {@code done} every 20 ms until it holds or {@code timeout} passes; returns it. */
  static boolean await(BooleanSupplier done, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!done.getAsBoolean()) {
      if (System.nanoTime() >= deadline) {
        return false;
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
      if (Thread.interrupted()) {
        throw new InterruptedException();
      }
    }
    return true;
  }
}

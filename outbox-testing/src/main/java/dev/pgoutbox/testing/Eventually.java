package dev.pgoutbox.testing;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * Waiting in tests: poll a condition until it holds or a deadline passes, never a fixed sleep.
 *
 * <pre>{@code
 * Eventually.await("the relay to publish 10 events", () -> publisher.delivered().size() == 10);
 * }</pre>
 *
 * <p>Stateless and thread-safe.
 */
public final class Eventually {

  /** The deadline of {@link #await(String, BooleanSupplier)}: 20 seconds. */
  public static final Duration DEADLINE = Duration.ofSeconds(20);

  private static final long POLL_MILLIS = 10;

  private Eventually() {}

  /** Whether {@code condition} holds within {@code seconds}, polling every 10 ms. */
  public static boolean holdsWithin(BooleanSupplier condition, long seconds)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    while (System.nanoTime() < deadline) {
      if (condition.getAsBoolean()) {
        return true;
      }
      Thread.sleep(POLL_MILLIS);
    }
    return condition.getAsBoolean();
  }

  /**
   * Whether {@code condition} holds within {@code within}, polling every 10 ms. An interrupt ends
   * the wait early (the thread stays interrupted) with the condition's last answer.
   */
  public static boolean holdsWithin(BooleanSupplier condition, Duration within) {
    long deadline = System.nanoTime() + within.toNanos();
    while (System.nanoTime() < deadline) {
      if (condition.getAsBoolean()) {
        return true;
      }
      try {
        Thread.sleep(POLL_MILLIS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    return condition.getAsBoolean();
  }

  /** Waits until {@code condition} holds, or fails after {@link #DEADLINE} naming {@code what}. */
  public static void await(String what, BooleanSupplier condition) {
    await(what, DEADLINE, condition);
  }

  /** Waits until {@code condition} holds, or fails after {@code within} naming {@code what}. */
  public static void await(String what, Duration within, BooleanSupplier condition) {
    until(within, condition, () -> "waiting for " + what);
  }

  /**
   * Waits until {@code condition} holds, or fails after {@code within} with {@code state} (read
   * only then) in the message. An interrupt fails the wait too.
   */
  public static void until(Duration within, BooleanSupplier condition, Supplier<String> state) {
    boolean held;
    try {
      held = holdsWithin(condition, Math.max(1, (within.toMillis() + 999) / 1000));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted while waiting: " + state.get(), e);
    }
    if (!held) {
      throw new AssertionError("not within " + within + ": " + state.get());
    }
  }
}

package dev.pgoutbox.relay.brokers;

import java.time.Duration;
import java.time.Instant;
import java.util.function.BooleanSupplier;

/** Polls a condition until it holds or a deadline passes; never a fixed sleep. */
public final class Deadline {

  private Deadline() {}

  /** Waits until {@code condition} holds, polling every 20 ms, or throws after {@code within}. */
  public static void await(String what, Duration within, BooleanSupplier condition)
      throws InterruptedException {
    Instant until = Instant.now().plus(within);
    while (!condition.getAsBoolean()) {
      if (Instant.now().isAfter(until)) {
        throw new AssertionError("timed out after " + within + " waiting for " + what);
      }
      Thread.sleep(20);
    }
  }
}

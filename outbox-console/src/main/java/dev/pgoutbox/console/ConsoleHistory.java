package dev.pgoutbox.console;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.List;
import org.jspecify.annotations.Nullable;

/** The last hour of overview samples, in memory, at most one per {@link #EVERY}. Thread-safe. */
final class ConsoleHistory {

  /** Shortest time between two samples. */
  static final Duration EVERY = Duration.ofSeconds(10);

  /** How far back the chart goes. */
  static final Duration SPAN = Duration.ofHours(1);

  /**
   * One sample.
   *
   * @param at when it was taken
   * @param pending pending events
   * @param deadLetters dead letters
   * @param blocked blocked aggregates
   * @param lagMillis age of the oldest pending event
   * @param publishedPerSecond events published per second over the last minute
   */
  record Sample(
      Instant at,
      long pending,
      long deadLetters,
      long blocked,
      long lagMillis,
      double publishedPerSecond) {}

  private final ArrayDeque<Sample> samples = new ArrayDeque<>();

  /** Whether a sample taken at {@code now} would be kept (none in the last {@link #EVERY}). */
  synchronized boolean due(Instant now) {
    @Nullable Sample last = samples.peekLast();
    return last == null || !now.isBefore(last.at().plus(EVERY));
  }

  /** Keeps {@code sample} and forgets those older than {@link #SPAN}. */
  synchronized void add(Sample sample) {
    samples.addLast(sample);
    Instant oldest = sample.at().minus(SPAN);
    while (!samples.isEmpty() && samples.peekFirst().at().isBefore(oldest)) {
      samples.removeFirst();
    }
  }

  /** The samples, oldest first. */
  synchronized List<Sample> samples() {
    return List.copyOf(samples);
  }
}

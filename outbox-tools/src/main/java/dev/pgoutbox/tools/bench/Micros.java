package dev.pgoutbox.tools.bench;

import org.HdrHistogram.Histogram;

/**
 * The harness's one way to keep and read durations: histograms of microseconds (up to an hour, 3
 * significant digits), read back as milliseconds rounded to the microsecond.
 */
final class Micros {

  /** Longest duration a histogram holds: one hour. */
  static final long HIGHEST = 3_600_000_000L;

  private Micros() {}

  /** An empty histogram of microseconds. */
  static Histogram histogram() {
    return new Histogram(HIGHEST, 3);
  }

  /** {@code nanos} as the microseconds a histogram records: at least 1, at most an hour. */
  static long of(long nanos) {
    return Math.min(HIGHEST, Math.max(1, nanos / 1000));
  }

  /** Records {@code nanos} as microseconds: at least 1, at most an hour. */
  static void record(Histogram histogram, long nanos) {
    histogram.recordValue(of(nanos));
  }

  /** The {@code percentile} of {@code histogram}, in milliseconds. */
  static double millis(Histogram histogram, double percentile) {
    return Result.round(histogram.getValueAtPercentile(percentile) / 1000.0, 3);
  }

  /** The largest value of {@code histogram}, in milliseconds. */
  static double maxMillis(Histogram histogram) {
    return Result.round(histogram.getMaxValue() / 1000.0, 3);
  }
}

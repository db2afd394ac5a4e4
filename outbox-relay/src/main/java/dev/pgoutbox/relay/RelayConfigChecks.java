package dev.pgoutbox.relay;

import io.github.resilience4j.core.IntervalFunction;
import java.time.Duration;

/** Checks the values given to {@link RelayConfig.Builder} and builds its exponential backoffs. */
final class RelayConfigChecks {

  private RelayConfigChecks() {}

  /** {@code value}, or an {@link IllegalArgumentException} naming {@code name} and its bounds. */
  static int between(String name, int value, int min, int max) {
    if (value < min || value > max) {
      throw new IllegalArgumentException(
          name + " must be between " + min + " and " + max + ", was " + value);
    }
    return value;
  }

  /** {@code value}, or an {@link IllegalArgumentException} naming {@code name} and its bounds. */
  static Duration between(String name, Duration value, Duration min, Duration max) {
    if (value == null) {
      throw new IllegalArgumentException(name + " must not be null");
    }
    if (value.compareTo(min) < 0 || value.compareTo(max) > 0) {
      throw new IllegalArgumentException(
          name + " must be between " + min + " and " + max + ", was " + value);
    }
    return value;
  }

  /**
   * Exponential backoff with these parameters, checked (see {@link
   * RelayConfig.Builder#exponentialBackoff}); random when {@code jitter} is above 0.
   */
  static IntervalFunction exponentialBackoff(
      Duration initial, double multiplier, double jitter, Duration max) {
    between("backoff initial", initial, Duration.ofMillis(1), Duration.ofDays(1));
    between("backoff max", max, initial, Duration.ofDays(7));
    if (!(multiplier >= 1.0 && multiplier <= 100.0)) {
      throw new IllegalArgumentException(
          "backoff multiplier must be between 1.0 and 100.0, was " + multiplier);
    }
    if (!(jitter >= 0.0 && jitter < 1.0)) {
      throw new IllegalArgumentException(
          "backoff jitter must be between 0.0 (inclusive) and 1.0 (exclusive), was " + jitter);
    }
    return jitter == 0.0
        ? IntervalFunction.ofExponentialBackoff(initial, multiplier, max)
        : IntervalFunction.ofExponentialRandomBackoff(initial, multiplier, jitter, max);
  }

  /** The default backoff: exponential random, from the {@code DEFAULT_BACKOFF_*} constants. */
  static IntervalFunction defaultBackoff() {
    return IntervalFunction.ofExponentialRandomBackoff(
        RelayConfig.DEFAULT_BACKOFF_INITIAL,
        RelayConfig.DEFAULT_BACKOFF_MULTIPLIER,
        RelayConfig.DEFAULT_BACKOFF_JITTER,
        RelayConfig.DEFAULT_BACKOFF_MAX);
  }

  /** How {@link RelayConfig#toString()} shows {@link #defaultBackoff()}. */
  static String defaultBackoffDescription() {
    return describeExponential(
        RelayConfig.DEFAULT_BACKOFF_INITIAL,
        RelayConfig.DEFAULT_BACKOFF_MULTIPLIER,
        RelayConfig.DEFAULT_BACKOFF_JITTER,
        RelayConfig.DEFAULT_BACKOFF_MAX);
  }

  /** How {@link RelayConfig#toString()} shows an exponential backoff. */
  static String describeExponential(
      Duration initial, double multiplier, double jitter, Duration max) {
    return "exponential(initial="
        + initial
        + ", multiplier="
        + multiplier
        + ", jitter="
        + jitter
        + ", max="
        + max
        + ")";
  }
}

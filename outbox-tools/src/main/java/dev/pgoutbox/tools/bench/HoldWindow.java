package dev.pgoutbox.tools.bench;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A window of a soak in which a separate session keeps a transaction with a real xid open, holding
 * back PostgreSQL's xmin horizon (vacuum can then remove no row that died after it began).
 *
 * @param startSeconds seconds after writing began
 * @param seconds how long the transaction stays open
 */
record HoldWindow(long startSeconds, long seconds) {

  private static final Pattern SPEC = Pattern.compile("(\\d{1,6})([smh]?):(\\d{1,6})([smh]?)");

  private static final Pattern DURATION = Pattern.compile("(\\d{1,6})([smh]?)");

  /** Longest default window: 10 minutes. */
  static final long DEFAULT_SECONDS = 600;

  long endSeconds() {
    return startSeconds + seconds;
  }

  /**
   * Parses {@code --hold-xmin <start>:<duration>}, each a whole number of seconds or with a unit
   * ({@code 25m:10m}, {@code 1500:600}, {@code 1h:90s}).
   *
   * @throws IllegalArgumentException naming the option, when malformed or empty
   */
  static HoldWindow parse(String spec) {
    Matcher m = SPEC.matcher(spec.trim().toLowerCase(Locale.ROOT));
    if (!m.matches()) {
      throw new IllegalArgumentException(
          "--hold-xmin must be <start>:<duration> in seconds, or with a unit s, m or h (e.g."
              + " 25m:10m), or none; was '"
              + spec
              + "'");
    }
    long start = toSeconds(m.group(1), m.group(2));
    long duration = toSeconds(m.group(3), m.group(4));
    if (duration < 1) {
      throw new IllegalArgumentException(
          "--hold-xmin duration must be at least 1 second, was '" + spec + "'");
    }
    return new HoldWindow(start, duration);
  }

  /**
   * The windows of a run of {@code runSeconds}: those given (sorted, checked to lie within the run
   * and not to overlap), none for {@code none}, or by default one window of {@link
   * #DEFAULT_SECONDS} (at most a third of the run) in its middle.
   */
  static List<HoldWindow> of(List<String> specs, long runSeconds) {
    if (specs.isEmpty()) {
      long seconds = Math.max(1, Math.min(DEFAULT_SECONDS, runSeconds / 3));
      return List.of(new HoldWindow((runSeconds - seconds) / 2, seconds));
    }
    if (specs.size() == 1 && specs.get(0).trim().equalsIgnoreCase("none")) {
      return List.of();
    }
    List<HoldWindow> windows = new ArrayList<>();
    for (String spec : specs) {
      HoldWindow window = parse(spec);
      if (window.endSeconds() > runSeconds) {
        throw new IllegalArgumentException(
            "--hold-xmin "
                + spec
                + " must end within the run (--seconds "
                + runSeconds
                + "), ends at "
                + window.endSeconds());
      }
      windows.add(window);
    }
    windows.sort(Comparator.comparingLong(HoldWindow::startSeconds));
    for (int i = 1; i < windows.size(); i++) {
      if (windows.get(i).startSeconds() < windows.get(i - 1).endSeconds()) {
        throw new IllegalArgumentException(
            "--hold-xmin windows must not overlap: "
                + windows.get(i - 1)
                + " and "
                + windows.get(i));
      }
    }
    return List.copyOf(windows);
  }

  /**
   * Parses a duration option: whole seconds, or with a unit {@code s}, {@code m} or {@code h}.
   *
   * @throws IllegalArgumentException naming {@code option}, when malformed
   */
  static long seconds(String value, String option) {
    Matcher m = DURATION.matcher(value.trim().toLowerCase(Locale.ROOT));
    if (!m.matches()) {
      throw new IllegalArgumentException(
          option
              + " must be a whole number of seconds, or with a unit s, m or h (e.g. 5m), was '"
              + value
              + "'");
    }
    return toSeconds(m.group(1), m.group(2));
  }

  private static long toSeconds(String amount, String unit) {
    long n = Long.parseLong(amount);
    return switch (unit) {
      case "m" -> n * 60;
      case "h" -> n * 3600;
      default -> n;
    };
  }

  @Override
  public String toString() {
    return startSeconds + "s:" + seconds + "s";
  }
}

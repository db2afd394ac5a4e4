package dev.pgoutbox.tools.admin;

import dev.pgoutbox.admin.StoredEvent;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.List;
import java.util.Locale;

/** The text shapes of the admin's output. */
final class AdminText {

  /** Events a preview prints before "... and N more". */
  static final int PREVIEW_LINES = 20;

  private AdminText() {}

  static String age(Duration d) {
    long seconds = d.toSeconds();
    if (seconds < 120) {
      return String.format(Locale.ROOT, "%.1f s", d.toMillis() / 1000.0);
    }
    if (seconds < 7200) {
      return seconds / 60 + " min";
    }
    return String.format(Locale.ROOT, "%.1f h", seconds / 3600.0);
  }

  static String bytes(long bytes) {
    if (bytes < 1024) {
      return bytes + " B";
    }
    if (bytes < 1024 * 1024) {
      return String.format(Locale.ROOT, "%.1f KiB", bytes / 1024.0);
    }
    if (bytes < 1024L * 1024 * 1024) {
      return String.format(Locale.ROOT, "%.1f MiB", bytes / (1024.0 * 1024));
    }
    return String.format(Locale.ROOT, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
  }

  /** Why an unpublished event waits: dead, backing off, parked or pending. */
  static String why(StoredEvent e) {
    if (e.deadAt() != null) {
      return "dead since " + e.deadAt() + " after " + e.attempts() + " attempts: " + e.lastError();
    }
    if (e.retryAfter() != null) {
      return "backing off until "
          + e.retryAfter()
          + " after "
          + e.attempts()
          + " attempts: "
          + e.lastError();
    }
    if (e.parked()) {
      return "parked by the WAL relay, for the table drainer";
    }
    return e.state();
  }

  /** One line per event (at most {@link #PREVIEW_LINES}), then how many were left out. */
  static void preview(PrintWriter out, List<StoredEvent> events) {
    int shown = Math.min(PREVIEW_LINES, events.size());
    for (StoredEvent e : events.subList(0, shown)) {
      out.printf(
          "  %s  %s/%s  %s  %s, %d attempts, last error: %s%n",
          e.id(),
          e.aggregateType(),
          e.aggregateId(),
          e.eventType(),
          e.state(),
          e.attempts(),
          e.lastError());
    }
    if (events.size() > shown) {
      out.printf("  ... and %d more%n", events.size() - shown);
    }
  }
}

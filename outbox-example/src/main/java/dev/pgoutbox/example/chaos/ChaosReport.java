package dev.pgoutbox.example.chaos;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The result of a chaos run: ordered fields, printed as a table or as one JSON line, and the
 * verdict over them.
 */
final class ChaosReport {

  private static final ObjectMapper JSON = new ObjectMapper();

  private final Map<String, @Nullable Object> fields = new LinkedHashMap<>();

  /** The run's outcome, and the command's exit code for it. */
  enum Verdict {
    /** Everything checked held. */
    PASSED(0),
    /** Something was lost, reordered, dead-lettered, miscounted, or a fault or relay failed. */
    FAILED(1),
    /**
     * The checker could not read everything the broker holds, so it cannot tell what was lost:
     * nothing is counted as lost, and the run fails as the checker's error, not the relays'.
     */
    CHECKER_ERROR(3);

    private final int exitCode;

    Verdict(int exitCode) {
      this.exitCode = exitCode;
    }

    int exitCode() {
      return exitCode;
    }

    /** As printed in the JSON: {@code passed}, {@code failed}, {@code checker_error}. */
    String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /** Adds {@code key}; a null value is a figure that was not measured (printed as null). */
  ChaosReport put(String key, @Nullable Object value) {
    fields.put(key, value);
    return this;
  }

  /**
   * Adds {@code verdict} and {@code ok} and returns the verdict. {@link Verdict#CHECKER_ERROR} when
   * {@code checker_error} is set, whatever else; else {@link Verdict#PASSED} when nothing was lost,
   * reordered, dead-lettered, received that no writer committed, or unreadable; the writers' count
   * matches the table; every fault step worked; no relay exited on its own; and something was
   * written at all.
   */
  Verdict judge() {
    boolean ok =
        fields.get("checker_error") == null
            && number("lost") == 0
            && number("reordered") == 0
            && number("dead_letters") == 0
            && number("unexpected") == 0
            && number("unreadable") == 0
            && number("written_in_db") == number("written")
            && number("fault_failures") == 0
            && number("relays_exited") == 0
            && number("written") > 0;
    Verdict verdict =
        fields.get("checker_error") != null
            ? Verdict.CHECKER_ERROR
            : ok ? Verdict.PASSED : Verdict.FAILED;
    fields.put("verdict", verdict.label());
    fields.put("ok", ok);
    return verdict;
  }

  /** Prints the report: one JSON line, or a table naming the relays that exited on their own. */
  void print(PrintWriter out, boolean json, List<String> exited) {
    if (json) {
      out.println(toJson());
    } else {
      printTable(out, exited);
    }
  }

  private long number(String key) {
    return fields.get(key) instanceof Number n ? n.longValue() : -1;
  }

  private String toJson() {
    try {
      return JSON.writeValueAsString(fields);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  private void printTable(PrintWriter out, List<String> exited) {
    Map<String, Object> r = fields;
    out.println();
    row(
        out,
        "written",
        r.get("written") + " events committed (" + r.get("written_in_db") + " rows in the table)");
    row(out, "published", r.get("published") + " marked published by the relays");
    row(out, "delivered", r.get("delivered") + " distinct events received by the checker");
    row(
        out,
        "lost",
        r.get("checker_error") == null
            ? r.get("lost")
            : "not known: the checker could not read everything ("
                + r.get("unconfirmed")
                + " events unconfirmed)");
    row(out, "reordered", r.get("reordered"));
    row(
        out,
        "duplicates",
        r.get("duplicates") + " (at-least-once: consumers dedupe on the event id)");
    row(out, "dead letters", r.get("dead_letters"));
    row(
        out,
        "wait",
        "p50 "
            + r.get("wait_p50_ms")
            + " ms, p99 "
            + r.get("wait_p99_ms")
            + " ms from commit to the checker");
    row(
        out,
        "longest wait",
        r.get("longest_wait_ms")
            + " ms (an event written at t="
            + r.get("longest_wait_written_at_s")
            + ", see the fault schedule)");
    row(out, "drain", r.get("drain_seconds") + " s after the writers stopped");
    row(
        out,
        "faults",
        r.get("relay_kills")
            + " relay kills, "
            + r.get("relay_freezes")
            + " relay freezes ("
            + r.get("frozen_in_transaction")
            + " inside a transaction), "
            + r.get("broker_outages")
            + " broker outages, "
            + r.get("postgres_crashes")
            + " PostgreSQL crashes, "
            + r.get("network_cuts")
            + " network cuts, "
            + r.get("network_partitions")
            + " network partitions"
            + (number("fault_failures") > 0 ? ", " + r.get("fault_failures") + " FAILED" : ""));
    row(
        out,
        "writer retries",
        r.get("writer_retries")
            + " ("
            + r.get("ambiguous_commits")
            + " ambiguous commits resolved)");
    if (!exited.isEmpty()) {
      row(out, "relays exited", String.join(", ", exited));
    }
    Object checkerError = r.get("checker_error");
    row(
        out,
        "verdict",
        checkerError != null
            ? "CHECKER ERROR: " + checkerError
            : (boolean) r.get("ok")
                ? "PASSED: nothing lost, order per aggregate kept"
                : "FAILED: see the lines above");
  }

  private static void row(PrintWriter out, String label, @Nullable Object value) {
    out.printf(Locale.ROOT, "  %-15s %s%n", label, value);
  }
}

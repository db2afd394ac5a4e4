package dev.pgoutbox.tools.chaos;

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
   * {@code checker_error} is set, whatever else; else {@link Verdict#PASSED} when nothing was lost
   * (every committed event delivered, dead-lettered, or held behind a dead letter under {@code
   * hold}), nothing reordered against the commit order, nothing delivered past a dead letter under
   * {@code hold}, position order matched commit order (when known), every dead letter has its
   * reason and came from an injected fault (no dead letter at all without publisher faults),
   * nothing was received that no writer committed or that was unreadable, the writers' count
   * matches the table, every fault step worked, no relay exited on its own, and something was
   * written at all.
   */
  Verdict judge() {
    boolean faults = Boolean.TRUE.equals(fields.get("publisher_faults"));
    boolean hold = !"release".equals(fields.get("dead_letter_policy"));
    boolean deadLettersExplained =
        faults
            ? number("dead_letters_with_reason") == number("dead_letters")
                && number("dead_letters_injected") == number("dead_letters")
            : number("dead_letters") == 0;
    boolean ok =
        fields.get("checker_error") == null
            && number("lost") == 0
            && number("reordered") == 0
            && (!hold || number("delivered_past_dead_letter") == 0)
            && (fields.get("commit_order_mismatches") == null
                || number("commit_order_mismatches") == 0)
            && deadLettersExplained
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
        r.get("written")
            + " events committed ("
            + r.get("written_in_db")
            + ("messages".equals(r.get("transport"))
                ? " messages in the ledger slot)"
                : " rows in the table)"));
    row(out, "published", r.get("published") + " marked published by the relays");
    row(out, "delivered", r.get("delivered") + " distinct events received by the checker");
    row(
        out,
        "dead letters",
        r.get("dead_letters")
            + " ("
            + r.get("dead_letters_with_reason")
            + " with their reason, "
            + r.get("dead_letters_injected")
            + " from injected faults; "
            + r.get("held_behind_dead_letters")
            + " events held behind them, "
            + r.get("dead_letter_policy")
            + " policy)");
    row(
        out,
        "retried",
        r.get("dead_letter_retries")
            + " dead letters retried through OutboxAdmin ("
            + r.get("retried_delivered")
            + " then delivered, "
            + r.get("retried_dead_again")
            + " dead again)");
    row(
        out,
        "lost",
        r.get("checker_error") == null
            ? r.get("lost")
            : "not known: the checker could not read everything ("
                + r.get("unconfirmed")
                + " events unconfirmed)");
    row(
        out,
        "reordered",
        r.get("reordered")
            + " against the writers' commit order ("
            + r.get("delivered_past_dead_letter")
            + " delivered past a dead letter; position order differed from commit order "
            + r.get("commit_order_mismatches")
            + " times)");
    row(
        out,
        "duplicates",
        r.get("duplicates") + " (at-least-once: consumers dedupe on the event id)");
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
            + (r.get("reader_kills") == null
                ? " relay kills, "
                : " relay kills (" + r.get("reader_kills") + " of the WAL slot's reader), ")
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
            + (r.get("slot_drops") == null
                ? ""
                : "; WAL slot: "
                    + r.get("slot_drops")
                    + " drops, "
                    + r.get("publication_drifts")
                    + " publication drifts, "
                    + r.get("slot_invalidations")
                    + " invalidations, "
                    + r.get("standby_promotions")
                    + " standby promotions, "
                    + r.get("wal_fall_backs_logged")
                    + " fall-backs logged, "
                    + r.get("fleet_restarts_on_a_new_slot")
                    + " restarts of every relay together on a new slot")
            + (number("fault_failures") > 0 ? ", " + r.get("fault_failures") + " FAILED" : ""));
    if (Boolean.TRUE.equals(r.get("publisher_faults"))) {
      row(
          out,
          "publisher",
          r.get("injected_poison")
              + " poison refusals ("
              + r.get("poison_written")
              + " poison events written), "
              + r.get("injected_permanent")
              + " random permanent, "
              + r.get("injected_retryable")
              + " retryable, "
              + r.get("injected_absurd_hints")
              + " absurd Retry-After hints, "
              + r.get("slow_batches")
              + " slow batches ("
              + r.get("slow_batches_timed_out")
              + " timed out; of the events they had published, "
              + r.get("timeout_answers_kept")
              + " kept, "
              + r.get("timeout_answers_charged")
              + " charged)");
    }
    row(
        out,
        "writers",
        r.get("writers")
            + " ("
            + r.get("writers_per_aggregate")
            + " per aggregate; "
            + r.get("writer_contention")
            + " appends began while another writer was appending to the same aggregate)");
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
                ? "PASSED: nothing lost, order per aggregate kept, every dead letter explained"
                : "FAILED: see the lines above");
  }

  private static void row(PrintWriter out, String label, @Nullable Object value) {
    out.printf(Locale.ROOT, "  %-15s %s%n", label, value);
  }
}

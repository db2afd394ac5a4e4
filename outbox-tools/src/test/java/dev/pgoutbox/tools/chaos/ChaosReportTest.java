package dev.pgoutbox.tools.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.tools.chaos.ChaosReport.Verdict;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class ChaosReportTest {

  private static ChaosReport clean() {
    ChaosReport report = new ChaosReport();
    for (String zero :
        List.of(
            "lost",
            "reordered",
            "duplicates",
            "dead_letters",
            "unexpected",
            "unreadable",
            "fault_failures",
            "relays_exited",
            "delivered_past_dead_letter",
            "commit_order_mismatches",
            "dead_letters_with_reason",
            "dead_letters_injected")) {
      report.put(zero, 0L);
    }
    return report
        .put("written", 100L)
        .put("written_in_db", 100L)
        .put("dead_letter_policy", "hold")
        .put("publisher_faults", false)
        .put("checker_error", null);
  }

  private static String json(ChaosReport report) {
    StringWriter out = new StringWriter();
    report.print(new PrintWriter(out, true), true, List.of());
    return out.toString();
  }

  private static String table(ChaosReport report) {
    StringWriter out = new StringWriter();
    report.print(new PrintWriter(out, true), false, List.of());
    return out.toString();
  }

  @Test
  void aCleanRunPasses() {
    ChaosReport report = clean().put("duplicates", 7L);

    assertThat(report.judge()).isEqualTo(Verdict.PASSED);
    assertThat(json(report))
        .contains("\"checker_error\":null")
        .contains("\"verdict\":\"passed\"")
        .contains("\"ok\":true")
        .contains("\"duplicates\":7");
    assertThat(Verdict.PASSED.exitCode()).isZero();
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "lost",
        "reordered",
        "dead_letters",
        "unexpected",
        "unreadable",
        "fault_failures",
        "relays_exited",
        "delivered_past_dead_letter",
        "commit_order_mismatches"
      })
  void anyOfTheseFailsTheRun(String field) {
    ChaosReport report = clean().put(field, 1L);

    assertThat(report.judge()).as(field).isEqualTo(Verdict.FAILED);
    assertThat(json(report)).contains("\"verdict\":\"failed\"").contains("\"ok\":false");
    assertThat(Verdict.FAILED.exitCode()).isEqualTo(1);
  }

  @Test
  void aCheckerThatCouldNotReadIsACheckerErrorNotALoss() {
    ChaosReport report =
        clean()
            .put("lost", null)
            .put("checker_error", "read stream PGOUTBOX_CHAOS up to sequence 82 of 7509")
            .put("unconfirmed", 7427L);

    assertThat(report.judge()).isEqualTo(Verdict.CHECKER_ERROR);
    assertThat(json(report))
        .contains("\"lost\":null")
        .contains("\"checker_error\":\"read stream PGOUTBOX_CHAOS up to sequence 82 of 7509\"")
        .contains("\"unconfirmed\":7427")
        .contains("\"verdict\":\"checker_error\"")
        .contains("\"ok\":false");
    assertThat(table(report))
        .contains("not known: the checker could not read everything (7427 events unconfirmed)")
        .contains("CHECKER ERROR: read stream PGOUTBOX_CHAOS up to sequence 82 of 7509")
        .doesNotContain("PASSED")
        .doesNotContain("FAILED");
    assertThat(Verdict.CHECKER_ERROR.exitCode()).isEqualTo(3);
  }

  @Test
  void aCheckerErrorOutranksEveryOtherFinding() {
    ChaosReport report = clean().put("reordered", 2L).put("checker_error", "consumer cancelled");

    assertThat(report.judge()).isEqualTo(Verdict.CHECKER_ERROR);
  }

  @Test
  void withoutACheckerErrorTheTableCountsTheLoss() {
    ChaosReport report = clean().put("lost", 3L);

    assertThat(report.judge()).isEqualTo(Verdict.FAILED);
    assertThat(table(report)).contains("  lost            3").contains("FAILED");
  }

  @Test
  void aCountThatDisagreesWithTheTableFailsTheRun() {
    assertThat(clean().put("written_in_db", 99L).judge()).isEqualTo(Verdict.FAILED);
  }

  @Test
  void aRunThatWroteNothingFails() {
    assertThat(clean().put("written", 0L).put("written_in_db", 0L).judge())
        .isEqualTo(Verdict.FAILED);
  }

  @Test
  void withPublisherFaultsDeadLettersFromInjectedFaultsWithTheirReasonPass() {
    ChaosReport report =
        clean()
            .put("publisher_faults", true)
            .put("dead_letters", 5L)
            .put("dead_letters_with_reason", 5L)
            .put("dead_letters_injected", 5L);

    assertThat(report.judge()).isEqualTo(Verdict.PASSED);
  }

  @Test
  void aDeadLetterWithoutItsReasonOrNotFromAnInjectedFaultFailsTheRun() {
    ChaosReport noReason =
        clean()
            .put("publisher_faults", true)
            .put("dead_letters", 5L)
            .put("dead_letters_with_reason", 4L)
            .put("dead_letters_injected", 4L);
    ChaosReport unexplained =
        clean()
            .put("publisher_faults", true)
            .put("dead_letters", 5L)
            .put("dead_letters_with_reason", 5L)
            .put("dead_letters_injected", 4L);

    assertThat(noReason.judge()).isEqualTo(Verdict.FAILED);
    assertThat(unexplained.judge()).isEqualTo(Verdict.FAILED);
  }

  @Test
  void underReleaseSuccessorsOfADeadLetterMayBeDelivered() {
    ChaosReport report =
        clean().put("dead_letter_policy", "release").put("delivered_past_dead_letter", 3L);

    assertThat(report.judge()).isEqualTo(Verdict.PASSED);
  }

  @Test
  void anUnknownCommitOrderIsNotAFailure() {
    assertThat(clean().put("commit_order_mismatches", null).judge()).isEqualTo(Verdict.PASSED);
  }
}

package dev.pgoutbox.example.chaos;

import static org.assertj.core.api.Assertions.assertThat;

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
            "relays_exited")) {
      report.put(zero, 0L);
    }
    return report.put("written", 100L).put("written_in_db", 100L);
  }

  @Test
  void aCleanRunPasses() {
    ChaosReport report = clean().put("duplicates", 7L);

    assertThat(report.judge()).isTrue();
    StringWriter out = new StringWriter();
    report.print(new PrintWriter(out, true), true, List.of());
    assertThat(out.toString()).contains("\"ok\":true").contains("\"duplicates\":7");
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
        "relays_exited"
      })
  void anyOfTheseFailsTheRun(String field) {
    ChaosReport report = clean().put(field, 1L);

    assertThat(report.judge()).as(field).isFalse();
  }

  @Test
  void aCountThatDisagreesWithTheTableFailsTheRun() {
    assertThat(clean().put("written_in_db", 99L).judge()).isFalse();
  }

  @Test
  void aRunThatWroteNothingFails() {
    assertThat(clean().put("written", 0L).put("written_in_db", 0L).judge()).isFalse();
  }
}

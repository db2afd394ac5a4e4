package dev.pgoutbox.tools;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

/** The tools' command line: help on every command, options checked before anything starts. */
class MainTest {

  private final StringWriter out = new StringWriter();
  private final StringWriter err = new StringWriter();

  private int run(String... args) {
    CommandLine command = new CommandLine(new Main());
    command.setOut(new PrintWriter(out, true));
    command.setErr(new PrintWriter(err, true));
    return command.execute(args);
  }

  @Test
  void helpListsTheCommands() {
    assertThat(run("--help")).isZero();
    assertThat(out.toString())
        .contains("pgoutbox-tools")
        .contains("bench")
        .contains("relay")
        .contains("chaos")
        .contains("admin");
  }

  @Test
  void adminHelpNamesItsVerbsAndExitCodes() {
    assertThat(run("admin", "--help")).isZero();
    assertThat(out.toString())
        .contains("status")
        .contains("dead-letters")
        .contains("show")
        .contains("retry")
        .contains("discard")
        .contains("PGOUTBOX_JDBC_URL")
        .contains("unreachable");
  }

  /**
   * Picocli reads every description as a format string: a lone {@code %} (as in "5% of its time")
   * makes it print a warning on stderr, three times, above the help it then shows unformatted.
   */
  @Test
  void everyCommandsHelpRendersWithoutWarnings() {
    PrintStream systemErr = System.err;
    ByteArrayOutputStream picocliWarnings = new ByteArrayOutputStream();
    System.setErr(new PrintStream(picocliWarnings, true, StandardCharsets.UTF_8));
    int rendered;
    try {
      rendered = renderHelp(new CommandLine(new Main()));
    } finally {
      System.setErr(systemErr);
    }
    assertThat(rendered).isGreaterThan(5);
    assertThat(picocliWarnings.toString(StandardCharsets.UTF_8)).isEmpty();
  }

  /** Renders the help of {@code command} and of every command below it; returns how many. */
  private static int renderHelp(CommandLine command) {
    assertThat(command.getUsageMessage()).contains("Usage:");
    int rendered = 1;
    for (CommandLine sub : command.getSubcommands().values()) {
      rendered += renderHelp(sub);
    }
    return rendered;
  }

  @Test
  void relayHasHelp() {
    assertThat(run("relay", "--help")).isZero();
    assertThat(out.toString()).contains("Usage: pgoutbox-tools relay").contains("--jdbc-url");
  }

  @Test
  void relayNeedsABrokerAndOnlyOne() {
    assertThat(run("relay", "--jdbc-url", "jdbc:postgresql://localhost/x")).isEqualTo(2);
    assertThat(err.toString()).contains("--kafka").contains("--rabbitmq").contains("--nats");
  }

  @Test
  void chaosHelpNamesTheIssueOptions() {
    assertThat(run("chaos", "--help")).isZero();
    assertThat(out.toString())
        .contains("--relays")
        .contains("--writers")
        .contains("--aggregates")
        .contains("--seconds")
        .contains("--broker")
        .contains("--json");
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "--relays 0|--relays must be between 1 and 16, was 0",
        "--seconds 5|--seconds must be between 10 and 86400, was 5",
        "--writers 100|--writers must be between 1 and 64, was 100",
        "--broker kafak|--broker must be kafka, rabbitmq or nats, was 'kafak'"
      })
  void chaosRefusesBadOptionsBeforeStartingAnything(String caseText) {
    String[] parts = caseText.split("\\|");
    String[] option = parts[0].split(" ");

    assertThat(run("chaos", option[0], option[1])).isEqualTo(2);
    assertThat(err.toString()).contains(parts[1]);
  }
}

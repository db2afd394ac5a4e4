package dev.pgoutbox.example;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

/** The command line: help on every command, options checked before anything starts. */
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
        .contains("pgoutbox-example")
        .contains("serve")
        .contains("demo")
        .contains("bench")
        .contains("relay")
        .contains("chaos");
  }

  @ParameterizedTest
  @ValueSource(strings = {"serve", "demo", "relay"})
  void everyCommandHasHelp(String name) {
    assertThat(run(name, "--help")).isZero();
    assertThat(out.toString()).contains("Usage: pgoutbox-example " + name).contains("--jdbc-url");
  }

  @Test
  void serveHelpNamesEveryOption() {
    run("serve", "--help");
    assertThat(out.toString())
        .contains("--kafka")
        .contains("--rabbitmq")
        .contains("--nats")
        .contains("--port")
        .contains("PGOUTBOX_DB_URL");
  }

  @Test
  void twoBrokersAtOnceAreRefusedBeforeAnythingStarts() {
    assertThat(run("serve", "--kafka", "localhost:9092", "--nats", "nats://localhost:4222"))
        .isEqualTo(2);
    assertThat(err.toString()).contains("mutually exclusive");
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

  @Test
  void aBadPortIsRefused() {
    assertThat(run("serve", "--port", "eighty")).isEqualTo(2);
    assertThat(err.toString()).contains("--port");
  }
}

package dev.pgoutbox.example;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

/** The example's command line: help on every command, options checked before anything starts. */
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
        .doesNotContain("bench")
        .doesNotContain("chaos");
  }

  @ParameterizedTest
  @ValueSource(strings = {"serve", "demo"})
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
  void aBadPortIsRefused() {
    assertThat(run("serve", "--port", "eighty")).isEqualTo(2);
    assertThat(err.toString()).contains("--port");
  }
}

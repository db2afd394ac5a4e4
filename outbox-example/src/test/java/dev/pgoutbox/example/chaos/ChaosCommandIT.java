package dev.pgoutbox.example.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgoutbox.example.Main;
import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

/**
 * The chaos run, shortened: real relay processes killed with SIGKILL, one frozen with SIGSTOP for
 * longer than PostgreSQL keeps its transaction (relays publish with a 2 s timeout, so that is 12
 * s), a broker outage, the embedded PostgreSQL killed and restarted, the relays' network to it cut,
 * and the checker's verdict read from the JSON line. The full run's figures are in the README
 * ("Reliability").
 */
class ChaosCommandIT {

  private static final ObjectMapper JSON = new ObjectMapper();

  @ParameterizedTest
  @ValueSource(strings = {"kafka", "nats", "rabbitmq"})
  void nothingIsLostOrReorderedThroughEveryFault(String broker) throws Exception {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine command = new CommandLine(new Main());
    command.setOut(new PrintWriter(out, true));
    command.setErr(new PrintWriter(err, true));

    int exitCode =
        command.execute(
            "chaos",
            "--broker",
            broker,
            "--relays",
            "2",
            "--writers",
            "2",
            "--aggregates",
            "100",
            "--rate",
            "200",
            "--seconds",
            "40",
            "--kill-every",
            "4",
            "--seed",
            "11",
            "--relay-publish-timeout",
            "1",
            "--json");

    String log = err.toString();
    System.out.println(log);
    System.out.println(out);
    assertThat(exitCode).as(out + "\n" + log).isZero();
    assertThat(log)
        .as("the schedule is printed first, then each fault as it happens")
        .contains("fault schedule (seconds after the writers start; seed 11)")
        .contains("SIGKILL relay-")
        .contains("SIGSTOP relay-")
        .contains("SIGCONT relay-")
        .contains("PostgreSQL killed")
        .contains("PostgreSQL restarted")
        .contains("relays' network to PostgreSQL cut")
        .contains("relays' network to PostgreSQL partitioned")
        .contains("broker back");
    JsonNode result = JSON.readTree(out.toString().strip());
    assertThat(result.get("checker_error").isNull())
        .as("the checker read everything the broker holds: %s", result.get("checker_error"))
        .isTrue();
    assertThat(result.get("verdict").asText()).isEqualTo("passed");
    // How much the writers get through depends on the machine's load (1,600-8,000 seen); what
    // the run proves is that all of it arrives in order, so only ask that there was real traffic.
    assertThat(result.get("written").asLong()).isGreaterThan(500);
    assertThat(result.get("written_in_db").asLong()).isEqualTo(result.get("written").asLong());
    assertThat(result.get("delivered").asLong()).isEqualTo(result.get("written").asLong());
    assertThat(result.get("published").asLong()).isEqualTo(result.get("written").asLong());
    assertThat(result.get("lost").asLong()).isZero();
    assertThat(result.get("reordered").asLong()).isZero();
    assertThat(result.get("dead_letters").asLong()).isZero();
    assertThat(result.get("unexpected").asLong()).isZero();
    assertThat(result.get("relay_kills").asInt()).isEqualTo(9);
    assertThat(result.get("relay_starts").asInt()).isEqualTo(2 + 9);
    assertThat(result.get("relay_freezes").asInt()).isEqualTo(1);
    assertThat(result.get("broker_outages").asInt()).isEqualTo(1);
    assertThat(result.get("postgres_crashes").asInt()).isEqualTo(1);
    assertThat(result.get("network_cuts").asInt()).isEqualTo(1);
    assertThat(result.get("network_partitions").asInt()).isEqualTo(1);
    assertThat(result.get("fault_failures").asInt()).isZero();
    assertThat(result.get("relays_exited").asInt()).isZero();
    assertThat(result.get("writer_retries").asLong())
        .as("the PostgreSQL crash reached the writers")
        .isPositive();
    assertThat(result.get("ok").asBoolean()).isTrue();
  }
}

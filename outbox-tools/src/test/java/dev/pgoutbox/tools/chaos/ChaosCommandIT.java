package dev.pgoutbox.tools.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgoutbox.tools.Main;
import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

/**
 * The chaos run, shortened: real relay processes killed with SIGKILL, one frozen with SIGSTOP for
 * longer than PostgreSQL keeps its transaction (relays publish with a 1 s timeout, so that is 13
 * s), a broker outage, the embedded PostgreSQL killed and restarted, the relays' network to it cut;
 * inside the relays, publisher faults (poison events, random permanent and retryable answers,
 * absurd Retry-After hints, slow batches past the timeout); four writers, two contending for each
 * aggregate; dead letters retried through OutboxAdmin during the run; and the checker's verdict
 * read from the JSON line. One fleet has one dead-letter policy, so the cases split them: Kafka and
 * RabbitMQ run under HOLD_AGGREGATE (nothing after a dead letter goes out until it is retried),
 * NATS under RELEASE_AGGREGATE (successors go on; a retried dead letter may arrive late). Nothing
 * asserted depends on throughput, only on there having been real traffic. The full run's figures
 * are in the README ("Reliability"). The WAL relays' run is shorter (20 s: relay kills that each
 * kill the slot's reader, a broker outage, a PostgreSQL crash, a network cut and a partition, then
 * the primary killed and its standby promoted (made synchronous and caught up first): the relays
 * find no slot on it, fall back to the table and are restarted together on a new slot; no freeze).
 */
class ChaosCommandIT {

  private static final ObjectMapper JSON = new ObjectMapper();

  @ParameterizedTest
  @CsvSource({"kafka, hold", "nats, release", "rabbitmq, hold"})
  void nothingIsLostOrReorderedThroughEveryFault(String broker, String policy) throws Exception {
    Run run =
        run(
            "chaos",
            "--broker",
            broker,
            "--relays",
            "2",
            "--writers",
            "4",
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
            "--dead-letter-policy",
            policy,
            "--writers-per-aggregate",
            "2",
            "--poison-every",
            "200",
            "--slow-batch-every",
            "5",
            "--retry-dead-letters-every",
            "5",
            "--json");

    String log = run.log();
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
    JsonNode result = run.result();
    // How much the writers get through depends on the machine's load (1,600-8,000 seen); what
    // the run proves is that all of it arrives in order, so only ask that there was real traffic.
    assertPassedWithNothingLostOrReordered(result, "table", 500);
    assertThat(result.get("published").asLong())
        .isLessThanOrEqualTo(result.get("written").asLong());
    assertThat(result.get("commit_order_mismatches").asLong())
        .as("with the writer's default lock, position order is commit order")
        .isZero();
    if (policy.equals("hold")) {
      assertThat(result.get("delivered_past_dead_letter").asLong()).isZero();
    } else {
      assertThat(result.get("held_behind_dead_letters").asLong()).isZero();
    }
    assertThat(result.get("unexpected").asLong()).isZero();
    // Every 200th event is poison and more than 500 were written: at least one reached a relay.
    assertThat(result.get("poison_written").asLong()).isGreaterThanOrEqualTo(2);
    assertThat(result.get("dead_letters").asLong()).isPositive();
    assertThat(result.get("dead_letters_with_reason").asLong())
        .isEqualTo(result.get("dead_letters").asLong());
    assertThat(result.get("dead_letters_injected").asLong())
        .as("no dead letter but those the run injected")
        .isEqualTo(result.get("dead_letters").asLong());
    assertThat(result.get("dead_letter_retries").asLong()).isPositive();
    assertThat(result.get("injected_poison").asLong()).isPositive();
    assertThat(result.get("injected_absurd_hints").asLong())
        .as("the relays survived Retry-After hints of Long.MAX_VALUE seconds and 200 years")
        .isPositive();
    assertThat(result.get("slow_batches_timed_out").asLong()).isPositive();
    assertThat(result.get("writer_contention").asLong()).isPositive();
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

  @Test
  void withWalRelaysNothingIsLostOrReorderedWhenTheReaderIsKilledAndPostgresCrashes()
      throws Exception {
    Run run =
        run(
            "chaos",
            "--source",
            "wal",
            "--broker",
            "kafka",
            "--relays",
            "2",
            "--writers",
            "4",
            "--aggregates",
            "100",
            "--rate",
            "200",
            "--seconds",
            "20",
            "--kill-every",
            "4",
            "--seed",
            "11",
            "--relay-publish-timeout",
            "1",
            "--dead-letter-policy",
            "hold",
            "--writers-per-aggregate",
            "2",
            "--poison-every",
            "200",
            "--slow-batch-every",
            "5",
            "--retry-dead-letters-every",
            "5",
            "--json");

    assertThat(run.log())
        .contains("chaos run: 2 WAL relay processes")
        .contains("(the slot's reader)")
        .contains("PostgreSQL killed")
        .contains("PostgreSQL restarted")
        .contains("relays' network to PostgreSQL cut")
        .contains("broker back")
        .contains("the standby promoted")
        .contains("relays started together on a new slot");
    JsonNode result = run.result();
    // As above, only ask for real traffic: a loaded machine writes far less than 200/s.
    assertPassedWithNothingLostOrReordered(result, "wal", 100);
    assertThat(result.get("commit_order_mismatches").asLong()).isZero();
    assertThat(result.get("delivered_past_dead_letter").asLong()).isZero();
    assertThat(result.get("unexpected").asLong()).isZero();
    assertThat(result.get("dead_letters_injected").asLong())
        .as("failures are parked and dead-lettered by the table relay as injected, no others")
        .isEqualTo(result.get("dead_letters").asLong());
    assertThat(result.get("relay_kills").asInt())
        .as("kills at 4, 8 and 12 s; none near the standby's promotion at 18 s")
        .isEqualTo(3);
    assertThat(result.get("standby_promotions").asInt()).isEqualTo(1);
    // Whether a relay logged its fall-back before the fleet's restart depends on timing: the
    // partition just before hangs their connections for up to their 10 s socket timeout.
    // WalFailoverIT and WalSlotLossIT check the fall-back itself.
    assertThat(result.get("wal_fall_backs_logged").asInt()).isNotNegative();
    assertThat(result.get("fleet_restarts_on_a_new_slot").asInt()).isEqualTo(1);
    assertThat(result.get("reader_kills").asInt())
        .as("the relay streaming the slot was killed, its WAL sender with it")
        .isPositive();
    assertThat(result.get("postgres_crashes").asInt()).isEqualTo(1);
    assertThat(result.get("fault_failures").asInt()).isZero();
    assertThat(result.get("relays_exited").asInt()).isZero();
    assertThat(result.get("writer_retries").asLong())
        .as("the PostgreSQL crash reached the writers")
        .isPositive();
    assertThat(result.get("ok").asBoolean()).isTrue();
  }

  /** What a run printed: its log (stderr), its JSON result, after asserting exit code 0. */
  private record Run(String log, JsonNode result) {}

  private static Run run(String... arguments) throws Exception {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine command = new CommandLine(new Main());
    command.setOut(new PrintWriter(out, true));
    command.setErr(new PrintWriter(err, true));

    int exitCode = command.execute(arguments);

    String log = err.toString();
    System.out.println(log);
    System.out.println(out);
    assertThat(exitCode).as(out + "\n" + log).isZero();
    return new Run(log, JSON.readTree(out.toString().strip()));
  }

  /**
   * What every chaos run must show: the checker read the broker, the verdict passed, real traffic
   * was written and all of it is in the database, and every committed event arrived (or is
   * accounted for by a dead letter), first deliveries in commit order.
   */
  private static void assertPassedWithNothingLostOrReordered(
      JsonNode result, String source, long moreThanWritten) {
    assertThat(result.get("source").asText()).isEqualTo(source);
    assertThat(result.get("checker_error").isNull())
        .as("the checker read everything the broker holds: %s", result.get("checker_error"))
        .isTrue();
    assertThat(result.get("verdict").asText()).isEqualTo("passed");
    assertThat(result.get("written").asLong()).isGreaterThan(moreThanWritten);
    assertThat(result.get("written_in_db").asLong()).isEqualTo(result.get("written").asLong());
    assertThat(result.get("lost").asLong()).isZero();
    assertThat(result.get("unaccounted").asLong())
        .as("every committed event delivered, a dead letter, or held behind one (hold)")
        .isZero();
    assertThat(result.get("reordered").asLong())
        .as("first deliveries in the order the writers committed")
        .isZero();
  }
}

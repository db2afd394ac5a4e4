package dev.pgoutbox.tools.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgoutbox.testing.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

/**
 * {@code bench soak --quick}, shortened to 20 s with a 6 s hold window, against the test database:
 * it must print one JSON object with the fields (whole run and per interval), hold the xmin
 * horizon for real (the oldest transaction's age shows in the intervals of the window), and lose or
 * reorder nothing. Speed is never asserted.
 */
class SoakCommandIT {

  private static final ObjectMapper JSON = new ObjectMapper();

  private static final List<String> RUN =
      List.of(
          "scenario",
          "rate",
          "seconds",
          "relays",
          "completion",
          "events",
          "events_per_s",
          "p50_ms",
          "p99_ms",
          "max_ms",
          "p99_outside_holds_ms",
          "kept_up",
          "max_pending",
          "drain_seconds",
          "max_dead_tuples",
          "autovacuum_runs",
          "table_bytes_ratio_last_half",
          "index_bytes_ratio_last_half",
          "lost",
          "reordered",
          "duplicates",
          "pg_version",
          "autovacuum",
          "fsync",
          "embedded_pg",
          "holds",
          "intervals");

  private static final List<String> INTERVAL =
      List.of(
          "t_s",
          "p50_ms",
          "p99_ms",
          "max_ms",
          "pending",
          "dead_tuples",
          "live_tuples",
          "dead_tuple_ratio",
          "table_bytes",
          "index_bytes",
          "claim_p99_ms",
          "batch_p99_ms",
          "autovacuum_count",
          "kept_up",
          "oldest_xact_s",
          "holding_xmin");

  private static final List<String> HOLD =
      List.of(
          "start_s",
          "seconds",
          "p99_before_ms",
          "p99_during_ms",
          "p99_after_ms",
          "recovery_s",
          "caught_up_s",
          "first_healthy_s",
          "xid",
          "opened_at_s",
          "closed_at_s");

  @ParameterizedTest
  @ValueSource(
      strings = {
        "--completion mark --retention 5s --retention-every 2s --rebuild-pending-indexes",
        "--completion delete --relays 2"
      })
  void quickSoakReportsEveryIntervalAndLosesNothing(String arguments) throws Exception {
    String schema =
        "bench_soak_" + Integer.toHexString(ThreadLocalRandom.current().nextInt(1 << 20));
    List<String> args = new ArrayList<>(List.of("soak"));
    args.addAll(List.of(arguments.split(" ")));
    args.addAll(
        List.of(
            "--quick",
            "--json",
            "--seconds",
            "20",
            "--hold-xmin",
            "6:6",
            "--sample-seconds",
            "2",
            "--rate",
            "400",
            "--jdbc-url",
            TestDatabase.get().jdbcUrl(),
            "--schema",
            schema));

    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    PrintStream original = System.out;
    int exit;
    try {
      System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
      exit = new CommandLine(new BenchCommand()).execute(args.toArray(String[]::new));
    } finally {
      System.setOut(original);
      try (var connection = TestDatabase.get().connect();
          var statement = connection.createStatement()) {
        statement.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
      }
    }
    String output = captured.toString(StandardCharsets.UTF_8);
    System.out.println(output);

    assertThat(exit).as("exit code of bench soak %s", arguments).isZero();
    List<String> lines = output.lines().filter(l -> l.startsWith("{")).toList();
    assertThat(lines).hasSize(1);
    JsonNode run = JSON.readTree(lines.getFirst());
    for (String field : RUN) {
      assertThat(run.has(field)).as("whole-run field %s", field).isTrue();
    }
    assertThat(run.get("lost").asLong()).as("lost").isZero();
    assertThat(run.get("reordered").asLong()).as("reordered").isZero();
    assertThat(run.get("duplicates").asLong()).as("duplicates").isNotNegative();
    assertThat(run.get("events").asLong()).isPositive();
    assertThat(run.get("p99_ms").asDouble()).isPositive();
    assertThat(run.get("drain_seconds").isNumber()).as("drained").isTrue();

    JsonNode intervals = run.get("intervals");
    assertThat(intervals.isArray()).isTrue();
    assertThat(intervals.size()).as("intervals of 2 s over 20 s").isBetween(9, 14);
    long published = 0;
    double previous = 0;
    for (JsonNode interval : intervals) {
      for (String field : INTERVAL) {
        assertThat(interval.has(field)).as("interval field %s in %s", field, interval).isTrue();
      }
      assertThat(interval.get("t_s").asDouble()).isGreaterThan(previous);
      previous = interval.get("t_s").asDouble();
      assertThat(interval.get("table_bytes").asLong()).isPositive();
      assertThat(interval.get("index_bytes").asLong()).isPositive();
      assertThat(interval.get("pending").asLong()).isNotNegative();
      assertThat(interval.get("dead_tuples").asLong()).isNotNegative();
      published += interval.get("published").asLong();
    }
    // Every event's latency was recorded in exactly one interval.
    assertThat(published).isEqualTo(run.get("events").asLong());

    JsonNode holds = run.get("holds");
    assertThat(holds.size()).isEqualTo(1);
    JsonNode hold = holds.get(0);
    for (String field : HOLD) {
      assertThat(hold.has(field)).as("hold field %s", field).isTrue();
    }
    assertThat(hold.get("xid").asLong()).as("a real xid was taken").isPositive();
    assertThat(hold.get("closed_at_s").asDouble() - hold.get("opened_at_s").asDouble())
        .isBetween(5.0, 8.0);
    // The session held the horizon: some interval of the window saw a transaction open 2 s or more.
    double oldestInWindow = 0;
    for (JsonNode interval : intervals) {
      if (interval.get("holding_xmin").asBoolean()) {
        oldestInWindow = Math.max(oldestInWindow, interval.get("oldest_xact_s").asDouble());
      }
    }
    assertThat(oldestInWindow).isGreaterThanOrEqualTo(2.0);

    if (arguments.contains("--rebuild-pending-indexes")) {
      JsonNode rebuilds = run.get("index_rebuilds");
      assertThat(rebuilds.size()).as("one rebuild for the one window: %s", rebuilds).isEqualTo(1);
      assertThat(rebuilds.get(0).get("t_s").asDouble())
          .as("after the window closed")
          .isGreaterThan(12.0);
      assertThat(rebuilds.get(0).get("freed_bytes").asLong()).isNotNegative();
    } else {
      assertThat(run.has("index_rebuilds")).isFalse();
    }
  }
}

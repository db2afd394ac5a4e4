package dev.pgoutbox.example.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgoutbox.db.testing.TestDatabase;
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
 * Each scenario of the harness, at its --quick size, against the test database: it must run, print
 * its JSON line(s) with the documented fields, and verify nothing was lost or reordered. Speed is
 * never asserted.
 */
class BenchSmokeIT {

  private static final ObjectMapper JSON = new ObjectMapper();

  @ParameterizedTest
  @ValueSource(
      strings = {
        "drain --relays 2",
        "drain --ordering unordered --completion delete --no-ceiling",
        "drain --publisher kafka --no-ceiling",
        "drain --publisher rabbitmq --no-ceiling",
        "drain --publisher nats --no-ceiling",
        "drain --publisher webhook --no-ceiling",
        "ceiling",
        "baseline --max-seconds 5",
        "latency --seconds 2",
        "latency --seconds 2 --poll-only --poll-interval-ms 100",
        "writer --seconds 1 --clients 1,2 --rounds 1",
        "history --history 20000 --claims 30"
      })
  void scenarioRunsAndVerifiesWhatItMeasured(String arguments) throws Exception {
    String schema =
        "bench_smoke_" + Integer.toHexString(ThreadLocalRandom.current().nextInt(1 << 20));
    List<String> args = new ArrayList<>(List.of(arguments.split(" ")));
    args.addAll(
        List.of(
            "--quick", "--json", "--jdbc-url", TestDatabase.get().jdbcUrl(), "--schema", schema));

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

    assertThat(exit).as("exit code of bench %s", arguments).isZero();
    List<JsonNode> lines = new ArrayList<>();
    for (String line : output.split("\n")) {
      if (line.startsWith("{")) {
        lines.add(JSON.readTree(line));
      }
    }
    assertThat(lines).isNotEmpty();
    for (JsonNode line : lines) {
      assertThat(line.get("scenario").asText()).isEqualTo(arguments.split(" ")[0]);
      assertThat(line.get("lost").asLong()).as("lost").isZero();
      assertThat(line.get("reordered").asLong()).as("reordered").isZero();
      assertThat(line.has("duplicates")).isTrue();
      assertThat(line.has("pg_version")).isTrue();
      assertThat(line.get("cores").asInt()).isPositive();
    }
  }
}

package dev.pgoutbox.tools.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgoutbox.testing.LogicalDecodingDatabase;
import dev.pgoutbox.testing.TestDatabase;
import dev.pgoutbox.testing.TestServer;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import picocli.CommandLine;

/**
 * Each scenario of the harness, at its --quick size, against the test database: it must run, print
 * its JSON line(s) with exactly the fields it measures (a figure it does not measure is left out,
 * never printed as a constant), with sane values, and verify nothing was lost or reordered. Speed
 * is never asserted.
 */
class BenchSmokeIT {

  private static final ObjectMapper JSON = new ObjectMapper();

  /** Every result says where it ran. */
  private static final List<String> WHERE =
      List.of("pg_version", "autovacuum", "fsync", "embedded_pg", "cores");

  private static final List<String> DATA =
      List.of("events", "aggregates", "relays", "batch", "ordering", "completion");

  private static final List<String> RUN = List.of("seconds", "events_per_s");

  private static final List<String> CHECK = List.of("lost", "reordered", "duplicates");

  private static final List<String> CEILING = List.of("ceiling_events_per_s", "ratio_to_ceiling");

  private static final List<String> BASELINE =
      List.of(
          "baseline_events_per_s",
          "baseline_jit_compile_ms",
          "ratio_to_baseline",
          "baseline_lost",
          "baseline_reordered",
          "baseline_duplicates");

  private static final List<String> LIMIT =
      List.of("limit_events_per_s", "ratio_to_limit", "limit_remaining");

  /** What {@code bench writer} prints. */
  private static final List<String> WRITER =
      List.of(
          "clients",
          "seconds",
          "business_tx_per_s",
          "floor_tx_per_s",
          "outbox_tx_per_s",
          "outbox_notify_tx_per_s",
          "events",
          "events_per_s",
          "ratio_to_floor",
          "ratio_notify_to_floor",
          "lost",
          "duplicates",
          "transport");

  private static Arguments scenario(String arguments, List<?>... keys) {
    Set<String> expected = new LinkedHashSet<>();
    expected.add("scenario");
    for (List<?> group : keys) {
      for (Object key : group) {
        expected.add((String) key);
      }
    }
    expected.addAll(WHERE);
    return Arguments.of(arguments, expected);
  }

  static Stream<Arguments> scenarios() {
    List<String> drain = List.of("publisher", "jit_compile_ms");
    List<String> remaining = List.of("remaining");
    return Stream.of(
        scenario("drain --relays 2", DATA, drain, RUN, CHECK, remaining, CEILING),
        scenario(
            "drain --ordering unordered --completion delete --no-ceiling",
            DATA,
            drain,
            RUN,
            CHECK,
            remaining),
        scenario(
            "drain --relays 2 --batch 300 --no-ceiling --with-baseline --with-limit",
            DATA,
            drain,
            RUN,
            CHECK,
            remaining,
            BASELINE,
            LIMIT),
        scenario(
            "drain --completion delete --no-ceiling --with-limit",
            DATA,
            drain,
            RUN,
            CHECK,
            remaining,
            LIMIT),
        scenario(
            "drain --warmup --rounds 2 --no-ceiling --with-limit",
            DATA,
            drain,
            RUN,
            CHECK,
            remaining,
            LIMIT,
            List.of("warmup_passes")),
        scenario("drain --publisher kafka --no-ceiling", DATA, drain, RUN, CHECK, remaining),
        scenario("drain --publisher rabbitmq --no-ceiling", DATA, drain, RUN, CHECK, remaining),
        scenario("drain --publisher nats --no-ceiling", DATA, drain, RUN, CHECK, remaining),
        scenario("drain --publisher webhook --no-ceiling", DATA, drain, RUN, CHECK, remaining),
        scenario("ceiling", DATA, List.of("source", "transport"), RUN, remaining),
        scenario(
            "baseline --max-seconds 5",
            List.of("mode", "events", "aggregates", "batch", "tick_ms", "drained", "complete"),
            RUN,
            CHECK),
        scenario(
            "baseline --continuous --relays 2",
            List.of("mode", "batched_marks", "events", "aggregates", "relays", "batch"),
            RUN,
            CHECK,
            remaining),
        scenario(
            "limit",
            List.of(
                "events",
                "aggregates",
                "sessions",
                "rows_per_commit",
                "completion",
                "completed",
                "remaining",
                "seconds",
                "limit_events_per_s")),
        scenario(
            "limit --completion delete --sessions 1 --rows-per-commit 700",
            List.of(
                "events",
                "aggregates",
                "sessions",
                "rows_per_commit",
                "completion",
                "completed",
                "remaining",
                "seconds",
                "limit_events_per_s")),
        scenario("latency --seconds 2", LATENCY, CHECK),
        scenario(
            "latency --seconds 2 --poll-only --poll-interval-ms 100 --relay-threads virtual",
            LATENCY,
            CHECK),
        scenario("writer --seconds 1 --clients 1,2 --rounds 1", WRITER),
        scenario(
            "history --history 20000 --claims 30",
            List.of(
                "history",
                "pending",
                "aggregates",
                "batch",
                "claims",
                "p50_ms_empty",
                "p99_ms_empty",
                "p50_ms",
                "p99_ms",
                "max_ms",
                "ratio_history_to_empty")));
  }

  private static final List<String> LATENCY =
      List.of(
          "writers",
          "rate",
          "relays",
          "source",
          "wake_up",
          "relay_threads",
          "poll_interval_ms",
          "events",
          "seconds",
          "warmup_seconds",
          "measured_events",
          "write_seconds",
          "events_per_s",
          "kept_up",
          "pending_at_end",
          "drain_seconds",
          "waited_s",
          "p50_ms",
          "p99_ms",
          "max_ms",
          "batches",
          "batch_p50_ms",
          "batch_p99_ms",
          // The breakdown of commit-to-publish time (LatencyBreakdown).
          "breakdown_events",
          "wait_p50_ms",
          "wait_p99_ms",
          "claim_p50_ms",
          "claim_p99_ms",
          "committed_during_batch_pct",
          "slowest_1pct_total_ms",
          "slowest_1pct_wait_ms",
          "slowest_1pct_claim_ms",
          "slowest_1pct_committed_during_batch_pct",
          "transport",
          "outbox_table_bytes_before",
          "outbox_table_bytes_after");

  private static final List<String> WAL_DRAIN =
      List.of(
          "wal_batch",
          "wal_completion",
          "wal_seconds",
          "wal_events_per_s",
          "ratio_wal_to_drain",
          "wal_lost",
          "wal_reordered",
          "wal_duplicates",
          "wal_remaining",
          "transport",
          "wal_stream_events_per_s",
          "ratio_wal_to_wal_stream",
          "wal_outbox_table_bytes_before",
          "wal_outbox_table_bytes_after");

  /** The WAL relay's scenarios, on a server with {@code wal_level=logical}. */
  static Stream<Arguments> walScenarios() {
    return Stream.of(
        scenario(
            "drain --source wal --no-ceiling",
            DATA,
            List.of("publisher", "jit_compile_ms"),
            RUN,
            CHECK,
            List.of("remaining"),
            WAL_DRAIN),
        scenario(
            "drain --source wal --batch 300 --completion mark",
            DATA,
            List.of("publisher", "jit_compile_ms"),
            RUN,
            CHECK,
            List.of("remaining"),
            WAL_DRAIN,
            List.of("wal_ceiling_events_per_s", "ratio_wal_to_wal_ceiling"),
            CEILING),
        scenario("ceiling --source wal", DATA, List.of("source", "transport", "decoded"), RUN),
        scenario("latency --source wal --seconds 2", LATENCY, CHECK),
        scenario(
            "writer --with-relays --seconds 1 --clients 1 --rounds 1",
            WRITER,
            List.of(
                "table_relay_tx_per_s",
                "wal_relay_tx_per_s",
                "ratio_wal_relay_to_table_relay",
                "table_relay_published",
                "wal_relay_published",
                "wal_decoding_only_tx_per_s",
                "ratio_wal_decoding_only_to_table_relay",
                "wal_decoding_only_streamed")));
  }

  @ParameterizedTest
  @MethodSource("walScenarios")
  void walScenarioPrintsWhatItMeasuresAndVerifiesIt(String arguments, Set<String> expectedKeys)
      throws Exception {
    List<JsonNode> lines = run(arguments, expectedKeys, LogicalDecodingDatabase.get());
    for (JsonNode line : lines) {
      if (line.has("source")) {
        assertThat(line.get("source").asText()).as("source").isEqualTo("wal");
      }
      if (arguments.startsWith("writer")) {
        // Each relay really ran beside the writers.
        assertThat(line.get("table_relay_published").asLong()).as("table relay").isPositive();
        assertThat(line.get("wal_relay_published").asLong()).as("WAL relay").isPositive();
        assertThat(line.get("wal_decoding_only_streamed").asLong())
            .as("slot read alone")
            .isPositive();
      }
      if (arguments.startsWith("drain")) {
        // The WAL relay at its own defaults unless the batch and completion are given.
        boolean given = arguments.contains("--batch");
        assertThat(line.get("wal_batch").asInt()).isEqualTo(given ? 300 : 2_000);
        assertThat(line.get("wal_completion").asText()).isEqualTo(given ? "mark" : "delete");
      }
      if (arguments.startsWith("latency")) {
        // Nothing crashes here: the reader publishes each event once.
        assertThat(line.get("duplicates").asLong()).as("duplicates").isZero();
      }
    }
  }

  @Test
  void aWalScenarioOnAServerWithoutLogicalDecodingSaysWhatItNeeds() throws Exception {
    String level;
    try (var connection = TestDatabase.get().connect();
        var statement = connection.createStatement();
        var rs = statement.executeQuery("show wal_level")) {
      rs.next();
      level = rs.getString(1);
    }
    Exit exit =
        bench(
            "latency",
            "--source",
            "wal",
            "--quick",
            "--jdbc-url",
            TestDatabase.get().jdbcUrl(),
            "--schema",
            "bench_smoke_not_logical");

    if ("logical".equals(level)) {
      // PGOUTBOX_TEST_JDBC_URL decodes: nothing to refuse, the run works.
      assertThat(exit.code()).as(exit.errors()).isZero();
      return;
    }
    assertThat(exit.code()).isNotZero();
    assertThat(exit.errors())
        .contains("needs a PostgreSQL with wal_level = logical")
        .contains("wal_level = " + level)
        .contains("ALTER SYSTEM SET wal_level = logical");
  }

  @Test
  void aServerSettingForAGivenDatabaseIsRefusedNamingIt() {
    Exit exit =
        bench(
            "latency",
            "--quick",
            "--jdbc-url",
            TestDatabase.get().jdbcUrl(),
            "--pg-setting",
            "auto_explain.log_min_duration=1000");

    assertThat(exit.code()).isNotZero();
    assertThat(exit.errors())
        .contains("--pg-setting applies to the embedded PostgreSQL only")
        .contains("auto_explain.log_min_duration");
  }

  /** How a bench run ended: its exit code and what it wrote to stderr. */
  private record Exit(int code, String errors) {}

  private static Exit bench(String... arguments) {
    ByteArrayOutputStream errors = new ByteArrayOutputStream();
    CommandLine command = new CommandLine(new BenchCommand());
    command.setErr(new PrintWriter(errors, true, StandardCharsets.UTF_8));
    int code = command.execute(arguments);
    return new Exit(code, errors.toString(StandardCharsets.UTF_8));
  }

  @ParameterizedTest
  @MethodSource("scenarios")
  void scenarioPrintsWhatItMeasuresAndVerifiesIt(String arguments, Set<String> expectedKeys)
      throws Exception {
    run(arguments, expectedKeys, TestDatabase.get());
  }

  private static List<JsonNode> run(String arguments, Set<String> expectedKeys, TestServer server)
      throws Exception {
    String schema =
        "bench_smoke_" + Integer.toHexString(ThreadLocalRandom.current().nextInt(1 << 20));
    List<String> args = new ArrayList<>(List.of(arguments.split(" ")));
    args.addAll(List.of("--quick", "--json", "--jdbc-url", server.jdbcUrl(), "--schema", schema));

    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    PrintStream original = System.out;
    int exit;
    try {
      System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
      exit = new CommandLine(new BenchCommand()).execute(args.toArray(String[]::new));
    } finally {
      System.setOut(original);
      try (var connection = server.connect();
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
    boolean rounds = arguments.contains("--rounds 2");
    assertThat(lines).hasSize(rounds ? 3 : lines.size());
    for (JsonNode line : lines) {
      Set<String> keys = new LinkedHashSet<>();
      for (Iterator<String> names = line.fieldNames(); names.hasNext(); ) {
        keys.add(names.next());
      }
      Set<String> expected = expectedKeys;
      if (rounds) {
        expected = line.has("rounds") ? summaryKeys(expectedKeys) : withRound(expectedKeys);
      }
      assertThat(keys).as("fields of bench %s", arguments).isEqualTo(expected);
      assertThat(line.get("scenario").asText()).isEqualTo(arguments.split(" ")[0]);
      assertThat(line.get("cores").asInt()).isPositive();
      assertThat(line.get("autovacuum").isBoolean()).as("autovacuum").isTrue();
      assertThat(line.get("fsync").isBoolean()).as("fsync").isTrue();
      assertThat(line.get("pg_version").asText()).isNotBlank();
      assertSane(arguments, line);
    }
    return lines;
  }

  /** A round's line: the single run's fields and its round number. */
  private static Set<String> withRound(Set<String> keys) {
    Set<String> expected = new LinkedHashSet<>(keys);
    expected.add("round");
    return expected;
  }

  /** The summary line: rounds, each rate and ratio with _min and _max, no seconds. */
  private static Set<String> summaryKeys(Set<String> keys) {
    Set<String> expected = new LinkedHashSet<>();
    expected.add("rounds");
    for (String key : keys) {
      if (key.equals("seconds")) {
        continue;
      }
      expected.add(key);
      if (key.endsWith("events_per_s") || key.startsWith("ratio_to_")) {
        expected.add(key + "_min");
        expected.add(key + "_max");
      }
    }
    return expected;
  }

  private static void assertSane(String arguments, JsonNode line) {
    for (String zero :
        List.of(
            "lost",
            "remaining",
            "baseline_lost",
            "limit_remaining",
            "wal_lost",
            "wal_reordered",
            "wal_remaining")) {
      if (line.has(zero)) {
        assertThat(line.get(zero).asLong()).as(zero).isZero();
      }
    }
    // The continuous naive relay promises no order; everything else must keep it.
    if (line.has("reordered") && !arguments.startsWith("baseline --continuous")) {
      assertThat(line.get("reordered").asLong()).as("reordered").isZero();
    }
    for (String count : List.of("duplicates", "baseline_reordered", "baseline_duplicates")) {
      if (line.has(count)) {
        assertThat(line.get(count).asLong()).as(count).isNotNegative();
      }
    }
    line.fieldNames()
        .forEachRemaining(
            key -> {
              if (key.endsWith("events_per_s") || key.startsWith("ratio_")) {
                assertThat(line.get(key).asDouble()).as(key).isPositive();
              }
            });
    if (line.has("decoded")) {
      assertThat(line.get("decoded").asLong()).isEqualTo(line.get("events").asLong());
    }
    if (line.has("completed")) {
      assertThat(line.get("completed").asLong()).isEqualTo(line.get("events").asLong());
    }
    if (line.has("kept_up")) {
      assertThat(line.get("kept_up").isBoolean()).isTrue();
      assertThat(line.get("pending_at_end").asLong()).isNotNegative();
      assertThat(line.get("waited_s").asDouble()).isNotNegative();
      // It drained (lost is 0), so the drain time is known.
      assertThat(line.get("drain_seconds").isNumber()).as("drain_seconds").isTrue();
    }
  }
}

package dev.pgoutbox.example.chaos;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.example.chaos.FaultPlan.Kind;
import dev.pgoutbox.example.infra.EmbeddedPostgresServer;
import dev.pgoutbox.example.infra.Files2;
import dev.pgoutbox.example.infra.TcpProxy;
import dev.pgoutbox.example.verify.DeliveryChecker;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code chaos}: relay processes, writers, a broker and an embedded PostgreSQL, with faults on a
 * printed schedule, and an independent checker that consumes everything from the broker. Exits 1 on
 * any loss, reordering, dead letter or accounting mismatch.
 */
@Command(
    name = "chaos",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    description = {
      "Proves 'nothing lost, order per aggregate kept' under faults: --relays relay processes"
          + " (separate JVMs) publish what --writers write across --aggregates for --seconds, while"
          + " relays are killed with SIGKILL, the broker goes away, PostgreSQL is killed and the"
          + " relays' network to it is cut, on a schedule printed first.",
      "An independent checker consumes the broker and reports written, published, lost,"
          + " reordered, duplicates, dead letters and the longest wait. Exit code 1 on any loss or"
          + " reordering.",
      "Runs on its own embedded PostgreSQL (it kills it) and, by default, an embedded Kafka."
    })
public final class ChaosCommand implements Callable<Integer> {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String SCHEMA = "public";

  @Spec CommandSpec spec;

  @Option(
      names = "--relays",
      defaultValue = "3",
      description = "Relay processes (default: ${DEFAULT-VALUE})")
  int relays = 3;

  @Option(
      names = "--writers",
      defaultValue = "4",
      description = "Writer threads (default: ${DEFAULT-VALUE})")
  int writers = 4;

  @Option(
      names = "--aggregates",
      defaultValue = "1000",
      description = "Aggregates written to (default: ${DEFAULT-VALUE})")
  int aggregates = 1000;

  @Option(
      names = "--seconds",
      defaultValue = "120",
      description = "How long the writers write, faults included (default: ${DEFAULT-VALUE})")
  int seconds = 120;

  @Option(
      names = "--rate",
      defaultValue = "400",
      description = "Events per second, all writers together (default: ${DEFAULT-VALUE})")
  int rate = 400;

  @Option(
      names = "--broker",
      defaultValue = "kafka",
      description = "kafka (embedded), rabbitmq or nats (default: ${DEFAULT-VALUE})")
  String broker = "kafka";

  @Option(
      names = "--rabbitmq",
      defaultValue = "amqp://guest:guest@127.0.0.1:5672",
      description = "RabbitMQ URI for --broker rabbitmq (default: ${DEFAULT-VALUE})")
  String rabbitmq = "amqp://guest:guest@127.0.0.1:5672";

  @Option(
      names = "--kill-every",
      defaultValue = "5",
      description = "Seconds between relay kills (default: ${DEFAULT-VALUE})")
  int killEvery = 5;

  @Option(
      names = "--relay-publish-timeout",
      defaultValue = "30",
      description =
          "The relays' publishTimeout in seconds; a relay is frozen for this + 12 s, longer than"
              + " PostgreSQL keeps its transaction (default: ${DEFAULT-VALUE})")
  int relayPublishTimeout = 30;

  @Option(
      names = "--drain-timeout",
      defaultValue = "180",
      description =
          "Seconds to wait, after the writers stop, for every event to arrive (default:"
              + " ${DEFAULT-VALUE})")
  int drainTimeout = 180;

  @Option(names = "--seed", description = "Seed of the fault schedule (default: random)")
  @Nullable Long seed;

  @Option(names = "--json", description = "Print the result as one JSON line")
  boolean json;

  @Option(names = "--keep", description = "Keep the run's directory (relay logs, PostgreSQL data)")
  boolean keep;

  @Override
  public Integer call() throws Exception {
    validate();
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter log = json ? spec.commandLine().getErr() : out;
    long runSeed = seed != null ? seed : ThreadLocalRandom.current().nextLong(1, 1_000_000);
    // The relay's idle-transaction timeout is publishTimeout + 10 s; the freeze outlasts it.
    FaultPlan plan = FaultPlan.of(runSeed, seconds, relays, killEvery, relayPublishTimeout + 12);
    Path runDir = Files.createTempDirectory("pgoutbox-chaos");
    Deque<AutoCloseable> resources = new ArrayDeque<>();
    try {
      EmbeddedPostgresServer postgres = EmbeddedPostgresServer.start(runDir.resolve("postgres"));
      resources.push(postgres);
      HikariDataSource dataSource = pool(postgres.jdbcUrl(), writers + 2);
      resources.push(dataSource);
      OutboxSchema.migrate(dataSource, SCHEMA);
      TcpProxy relayNetwork = TcpProxy.to(postgres.port());
      resources.push(relayNetwork);
      ChaosBroker chaosBroker = startBroker();
      resources.push(chaosBroker);
      DeliveryChecker checker = new DeliveryChecker();
      resources.push(chaosBroker.consume(checker));

      List<String> relayArguments = new ArrayList<>();
      relayArguments.addAll(
          List.of(
              "--jdbc-url",
              "jdbc:postgresql://127.0.0.1:"
                  + relayNetwork.port()
                  + "/postgres?user=postgres&connectTimeout=5&socketTimeout=10&tcpKeepAlive=true",
              "--schema",
              SCHEMA,
              "--publish-timeout",
              Integer.toString(relayPublishTimeout)));
      relayArguments.addAll(chaosBroker.relayArguments());
      RelayFleet fleet = new RelayFleet(relays, relayArguments, runDir);
      resources.push(fleet);

      log.printf(
          Locale.ROOT,
          "chaos run: %d relay processes, %d writers, %d aggregates, %d s at %d events/s, broker"
              + " %s%n  run directory %s%n",
          relays,
          writers,
          aggregates,
          seconds,
          rate,
          chaosBroker.describe(),
          runDir);
      plan.print(log, chaosBroker);
      log.flush();

      fleet.startAll();
      Writers writing = new Writers(dataSource, SCHEMA, writers, aggregates, rate, runSeed);
      FaultInjector faults =
          new FaultInjector(plan, fleet, chaosBroker, postgres, relayNetwork, dataSource, log);
      long started = System.nanoTime();
      long startedAtMillis = System.currentTimeMillis();
      writing.start();
      faults.start();
      while (System.nanoTime() - started < TimeUnit.SECONDS.toNanos(seconds)) {
        LockSupport.parkNanos(TimeUnit.SECONDS.toNanos(10));
        log.printf(
            Locale.ROOT,
            "chaos t=%.0f written %d, delivered %d, received %d%n",
            (System.nanoTime() - started) / 1e9,
            writing.written(),
            checker.delivered(),
            checker.received());
        log.flush();
      }
      writing.stop();
      faults.awaitDone();
      Map<String, Integer> committed = writing.committed();
      long drainStarted = System.nanoTime();
      long drainDeadline = drainStarted + TimeUnit.SECONDS.toNanos(drainTimeout);
      while (System.nanoTime() < drainDeadline
          && !(checker.hasAll(committed) && pending(dataSource) == 0)) {
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
      }
      double drainSeconds = (System.nanoTime() - drainStarted) / 1e9;
      // Late duplicates still in flight have a moment to show up.
      LockSupport.parkNanos(TimeUnit.SECONDS.toNanos(1));
      List<String> exited = fleet.exitedOnTheirOwn();

      Map<String, Object> result = new LinkedHashMap<>();
      result.put("scenario", "chaos");
      result.put("broker", broker);
      result.put("relays", relays);
      result.put("writers", writers);
      result.put("aggregates", aggregates);
      result.put("seconds", seconds);
      result.put("seed", runSeed);
      result.put("written", writing.written());
      result.put("written_in_db", count(dataSource, "true"));
      result.put("published", count(dataSource, "processed_at is not null"));
      result.put("delivered", checker.delivered());
      result.put("lost", checker.missing(committed));
      result.put("reordered", checker.reordered());
      result.put("duplicates", checker.duplicates());
      result.put("unexpected", checker.unexpected(committed));
      result.put("unreadable", checker.unreadable());
      result.put("dead_letters", count(dataSource, "dead_at is not null"));
      result.put("wait_p50_ms", checker.waitPercentileMillis(50));
      result.put("wait_p99_ms", checker.waitPercentileMillis(99));
      result.put("longest_wait_ms", checker.longestWaitMillis());
      result.put(
          "longest_wait_written_at_s",
          Math.round((checker.longestWaitWrittenAt() - startedAtMillis) / 100.0) / 10.0);
      result.put("drain_seconds", Math.round(drainSeconds * 10) / 10.0);
      result.put("relay_kills", fleet.kills());
      result.put("relay_starts", fleet.starts());
      result.put("relay_freezes", plan.count(Kind.RELAY_FREEZE));
      result.put("frozen_in_transaction", faults.frozenInTransaction());
      result.put("broker_outages", plan.count(Kind.BROKER_OUTAGE));
      result.put("postgres_crashes", plan.count(Kind.POSTGRES_CRASH));
      result.put("network_cuts", plan.count(Kind.NETWORK_CUT));
      result.put("network_partitions", plan.count(Kind.NETWORK_PARTITION));
      result.put("fault_failures", faults.failures());
      result.put("writer_retries", writing.failedAttempts());
      result.put("ambiguous_commits", writing.ambiguousCommits());
      result.put("relays_exited", exited.size());
      boolean ok =
          (long) result.get("lost") == 0
              && (long) result.get("reordered") == 0
              && (long) result.get("dead_letters") == 0
              && (long) result.get("unexpected") == 0
              && (long) result.get("unreadable") == 0
              && (long) result.get("written_in_db") == writing.written()
              && faults.failures() == 0
              && exited.isEmpty()
              && writing.written() > 0;
      result.put("ok", ok);
      if (json) {
        out.println(toJson(result));
      } else {
        printTable(out, result, exited);
      }
      out.flush();
      return ok ? 0 : 1;
    } finally {
      closeAll(resources, log);
      if (!keep) {
        Files2.deleteRecursively(runDir);
      }
    }
  }

  private void validate() {
    requireBetween("--relays", relays, 1, 16);
    requireBetween("--writers", writers, 1, 64);
    requireBetween("--aggregates", aggregates, 1, 10_000_000);
    requireBetween("--seconds", seconds, 10, 86_400);
    requireBetween("--rate", rate, 1, 100_000);
    requireBetween("--kill-every", killEvery, 1, 3_600);
    requireBetween("--drain-timeout", drainTimeout, 1, 86_400);
    requireBetween("--relay-publish-timeout", relayPublishTimeout, 1, 3_600);
    if (!List.of("kafka", "rabbitmq", "nats").contains(broker)) {
      throw new ParameterException(
          spec.commandLine(), "--broker must be kafka, rabbitmq or nats, was '" + broker + "'");
    }
  }

  private void requireBetween(String option, int value, int min, int max) {
    if (value < min || value > max) {
      throw new ParameterException(
          spec.commandLine(),
          option + " must be between " + min + " and " + max + ", was " + value);
    }
  }

  private ChaosBroker startBroker() throws Exception {
    return switch (broker) {
      case "rabbitmq" -> RabbitMqChaosBroker.start(rabbitmq);
      case "nats" -> NatsChaosBroker.start();
      default -> KafkaChaosBroker.start();
    };
  }

  private static HikariDataSource pool(String jdbcUrl, int size) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(jdbcUrl);
    config.setPoolName("chaos-writers");
    config.setMaximumPoolSize(size);
    config.setConnectionTimeout(2_000);
    config.setInitializationFailTimeout(-1);
    return new HikariDataSource(config);
  }

  /** Events neither published nor dead-lettered; -1 while the database does not answer. */
  private static long pending(HikariDataSource dataSource) {
    return count(dataSource, "processed_at is null and dead_at is null");
  }

  private static long count(HikariDataSource dataSource, String condition) {
    try (Connection connection = dataSource.getConnection();
        Statement statement = connection.createStatement();
        ResultSet rs =
            statement.executeQuery(
                "select count(*) from " + SCHEMA + ".outbox_events where " + condition)) {
      rs.next();
      return rs.getLong(1);
    } catch (Exception e) {
      return -1;
    }
  }

  private static String toJson(Map<String, Object> result) {
    try {
      return JSON.writeValueAsString(result);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  private static void printTable(PrintWriter out, Map<String, Object> r, List<String> exited) {
    out.println();
    row(
        out,
        "written",
        r.get("written") + " events committed (" + r.get("written_in_db") + " rows in the table)");
    row(out, "published", r.get("published") + " marked published by the relays");
    row(out, "delivered", r.get("delivered") + " distinct events received by the checker");
    row(out, "lost", r.get("lost"));
    row(out, "reordered", r.get("reordered"));
    row(
        out,
        "duplicates",
        r.get("duplicates") + " (at-least-once: consumers dedupe on the event id)");
    row(out, "dead letters", r.get("dead_letters"));
    row(
        out,
        "wait",
        "p50 "
            + r.get("wait_p50_ms")
            + " ms, p99 "
            + r.get("wait_p99_ms")
            + " ms from commit to the checker");
    row(
        out,
        "longest wait",
        r.get("longest_wait_ms")
            + " ms (an event written at t="
            + r.get("longest_wait_written_at_s")
            + ", see the fault schedule)");
    row(out, "drain", r.get("drain_seconds") + " s after the writers stopped");
    row(
        out,
        "faults",
        r.get("relay_kills")
            + " relay kills, "
            + r.get("relay_freezes")
            + " relay freezes ("
            + r.get("frozen_in_transaction")
            + " inside a transaction), "
            + r.get("broker_outages")
            + " broker outages, "
            + r.get("postgres_crashes")
            + " PostgreSQL crashes, "
            + r.get("network_cuts")
            + " network cuts, "
            + r.get("network_partitions")
            + " network partitions"
            + ((int) r.get("fault_failures") > 0
                ? ", " + r.get("fault_failures") + " FAILED"
                : ""));
    row(
        out,
        "writer retries",
        r.get("writer_retries")
            + " ("
            + r.get("ambiguous_commits")
            + " ambiguous commits resolved)");
    if (!exited.isEmpty()) {
      row(out, "relays exited", String.join(", ", exited));
    }
    row(
        out,
        "verdict",
        (boolean) r.get("ok")
            ? "PASSED: nothing lost, order per aggregate kept"
            : "FAILED: see the lines above");
  }

  private static void row(PrintWriter out, String label, @Nullable Object value) {
    out.printf(Locale.ROOT, "  %-15s %s%n", label, value);
  }

  private static void closeAll(Deque<AutoCloseable> resources, PrintWriter log) {
    while (!resources.isEmpty()) {
      AutoCloseable resource = resources.pop();
      try {
        resource.close();
      } catch (Exception e) {
        log.println("chaos: could not release " + resource + ": " + e);
      }
    }
  }
}

package dev.pgoutbox.example.chaos;

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
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
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
 * any loss, reordering, dead letter or accounting mismatch, 3 when the checker could not read.
 */
@Command(
    name = "chaos",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    description = {
      "Proves 'nothing lost, order per aggregate kept' under faults: --relays relay processes"
          + " (separate JVMs) publish what --writers write across --aggregates for --seconds,"
          + " while relays are killed with SIGKILL and one is frozen with SIGSTOP past its lease,"
          + " the broker goes away, PostgreSQL is killed, and the relays' network to it is cut and"
          + " partitioned, on a schedule printed first.",
      "An independent checker consumes the broker and reports written, published, lost,"
          + " reordered, duplicates, dead letters and the waits. Exit code 1 on any loss,"
          + " reordering, dead letter or count mismatch; exit code 3 when the checker could not"
          + " read everything the broker holds (checker_error: nothing is counted as lost then).",
      "Runs on its own embedded PostgreSQL (it kills it) and, by default, an embedded Kafka."
    })
public final class ChaosCommand implements Callable<Integer> {

  private static final String SCHEMA = "public";

  /** How long the checker may take, at the verdict, to read what the broker holds. */
  private static final Duration CHECKER_GRACE = Duration.ofSeconds(10);

  @Spec CommandSpec spec;

  @Option(
      names = "--relays",
      paramLabel = "N",
      defaultValue = "3",
      description = "Relay processes (default: ${DEFAULT-VALUE})")
  int relays = 3;

  @Option(
      names = "--writers",
      paramLabel = "N",
      defaultValue = "4",
      description = "Writer threads (default: ${DEFAULT-VALUE})")
  int writers = 4;

  @Option(
      names = "--aggregates",
      paramLabel = "N",
      defaultValue = "1000",
      description = "Aggregates written to (default: ${DEFAULT-VALUE})")
  int aggregates = 1000;

  @Option(
      names = "--seconds",
      paramLabel = "S",
      defaultValue = "120",
      description = "How long the writers write, faults included (default: ${DEFAULT-VALUE})")
  int seconds = 120;

  @Option(
      names = "--rate",
      paramLabel = "N",
      defaultValue = "400",
      description = "Events per second, all writers together (default: ${DEFAULT-VALUE})")
  int rate = 400;

  @Option(
      names = "--broker",
      paramLabel = "BROKER",
      defaultValue = "kafka",
      description = "kafka (embedded), rabbitmq or nats (default: ${DEFAULT-VALUE})")
  String broker = "kafka";

  @Option(
      names = "--rabbitmq",
      paramLabel = "URI",
      defaultValue = "amqp://guest:guest@127.0.0.1:5672",
      description = "RabbitMQ URI for --broker rabbitmq (default: ${DEFAULT-VALUE})")
  String rabbitmq = "amqp://guest:guest@127.0.0.1:5672";

  @Option(
      names = "--kill-every",
      paramLabel = "S",
      defaultValue = "5",
      description = "Seconds between relay kills (default: ${DEFAULT-VALUE})")
  int killEvery = 5;

  @Option(
      names = "--relay-publish-timeout",
      paramLabel = "S",
      defaultValue = "30",
      description =
          "The relays' publishTimeout in seconds; a relay is frozen for this + 12 s, longer than"
              + " PostgreSQL keeps its transaction (default: ${DEFAULT-VALUE})")
  int relayPublishTimeout = 30;

  @Option(
      names = "--drain-timeout",
      paramLabel = "S",
      defaultValue = "180",
      description =
          "Seconds to wait, after the writers stop, for every event to arrive (default:"
              + " ${DEFAULT-VALUE})")
  int drainTimeout = 180;

  @Option(
      names = "--seed",
      paramLabel = "N",
      description = "Seed of the fault schedule (default: random)")
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
      CheckerFeed feed = chaosBroker.consume(checker);
      resources.push(feed);

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
          && !feed.failed()
          && !(checker.hasAll(committed) && TableCounts.of(dataSource).pending() == 0)) {
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
      }
      double drainSeconds = (System.nanoTime() - drainStarted) / 1e9;
      // Late duplicates still in flight have a moment to show up.
      LockSupport.parkNanos(TimeUnit.SECONDS.toNanos(1));
      // Whether the checker read all the broker holds: if not, what it missed is not a loss.
      String checkerError = feed.readError(CHECKER_GRACE);
      long missing = checker.missing(committed);
      List<String> exited = fleet.exitedOnTheirOwn();
      TableCounts table = TableCounts.of(dataSource);

      ChaosReport report = new ChaosReport();
      report
          .put("scenario", "chaos")
          .put("broker", broker)
          .put("relays", relays)
          .put("writers", writers)
          .put("aggregates", aggregates)
          .put("seconds", seconds)
          .put("seed", runSeed)
          .put("written", writing.written())
          .put("written_in_db", table.rows())
          .put("published", table.published())
          .put("delivered", checker.delivered())
          .put("lost", checkerError == null ? missing : null)
          .put("reordered", checker.reordered())
          .put("duplicates", checker.duplicates())
          .put("unexpected", checker.unexpected(committed))
          .put("unreadable", checker.unreadable())
          .put("dead_letters", table.deadLetters())
          .put("wait_p50_ms", checker.waitPercentileMillis(50))
          .put("wait_p99_ms", checker.waitPercentileMillis(99))
          .put("longest_wait_ms", checker.longestWaitMillis())
          .put(
              "longest_wait_written_at_s",
              checker.delivered() == 0
                  ? null
                  : Math.round((checker.longestWaitWrittenAt() - startedAtMillis) / 100.0) / 10.0)
          .put("drain_seconds", Math.round(drainSeconds * 10) / 10.0)
          .put("relay_kills", fleet.kills())
          .put("relay_starts", fleet.starts())
          .put("relay_freezes", plan.count(Kind.RELAY_FREEZE))
          .put("frozen_in_transaction", faults.frozenInTransaction())
          .put("broker_outages", plan.count(Kind.BROKER_OUTAGE))
          .put("postgres_crashes", plan.count(Kind.POSTGRES_CRASH))
          .put("network_cuts", plan.count(Kind.NETWORK_CUT))
          .put("network_partitions", plan.count(Kind.NETWORK_PARTITION))
          .put("fault_failures", faults.failures())
          .put("writer_retries", writing.failedAttempts())
          .put("ambiguous_commits", writing.ambiguousCommits())
          .put("relays_exited", exited.size())
          .put("checker_error", checkerError);
      if (checkerError != null) {
        report.put("unconfirmed", missing);
      }
      feed.figures().forEach(report::put);
      ChaosReport.Verdict verdict = report.judge();
      report.print(out, json, exited);
      out.flush();
      return verdict.exitCode();
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

  /** The outbox table's rows by state, in one query. */
  private record TableCounts(long rows, long published, long deadLetters, long pending) {

    /** All -1 while the database does not answer. */
    static TableCounts of(HikariDataSource dataSource) {
      try (Connection connection = dataSource.getConnection();
          Statement statement = connection.createStatement();
          ResultSet rs =
              statement.executeQuery(
                  "select count(*),"
                      + " count(*) filter (where processed_at is not null),"
                      + " count(*) filter (where dead_at is not null),"
                      + " count(*) filter (where processed_at is null and dead_at is null)"
                      + " from "
                      + SCHEMA
                      + ".outbox_events")) {
        rs.next();
        return new TableCounts(rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4));
      } catch (Exception e) {
        return new TableCounts(-1, -1, -1, -1);
      }
    }
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

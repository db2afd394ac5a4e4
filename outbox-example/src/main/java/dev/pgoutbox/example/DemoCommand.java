package dev.pgoutbox.example;

import ch.qos.logback.classic.Level;
import dev.pgoutbox.example.orders.AppSettings;
import dev.pgoutbox.example.orders.OrderApplication;
import dev.pgoutbox.relay.RelayConfig;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ThreadLocalRandom;
import org.jspecify.annotations.Nullable;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code demo}: the scripted walk-through of the README. Starts the service on embedded defaults,
 * drives it through its HTTP API, stops and restarts the broker, redelivers an event, poisons one,
 * and exits 0 only when every check held.
 */
@Command(
    name = "demo",
    mixinStandardHelpOptions = true,
    description = {
      "Runs a scripted walk-through of the outbox, with checks; exits 0 when all held.",
      "Step by step, on the order service:",
      "orders placed, paid and cancelled over HTTP; events published in order and shipments made;",
      "the broker stopped while orders keep coming; the broker back and the backlog drained;",
      "an event redelivered (the inbox ignores it); a poison event dead-lettered and retried.",
      "Ends with a summary table.",
      "Uses an embedded Kafka (it stops and restarts it) and, without --jdbc-url, an embedded"
          + " PostgreSQL."
    })
final class DemoCommand implements Callable<Integer> {

  @Option(
      names = "--jdbc-url",
      paramLabel = "URL",
      description =
          "PostgreSQL JDBC URL to run on instead of an embedded PostgreSQL. The demo works in a"
              + " fresh schema pgoutbox_demo_<random> and drops it at the end.")
  @Nullable String jdbcUrl;

  @Option(
      names = "--verbose",
      description = "Show the relay's and Kafka's own log lines (backoff warnings, reconnects)")
  boolean verbose;

  @Spec CommandSpec spec;

  /** Settings that keep the walk-through short: quick backoff, short timeouts, fast polling. */
  static RelayConfig demoRelayConfig() {
    return RelayConfig.builder()
        .batchSize(100)
        .pollInterval(Duration.ofMillis(200))
        .maxAttempts(30)
        .exponentialBackoff(Duration.ofMillis(250), 2.0, 0.2, Duration.ofSeconds(2))
        .publishTimeout(Duration.ofSeconds(5))
        .metricsRefreshInterval(Duration.ofMillis(500))
        .build();
  }

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    Map<String, Level> previous = verbose ? Map.of() : quietLogs();
    String schema =
        jdbcUrl == null
            ? "shop"
            : "pgoutbox_demo_" + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt());
    AppSettings settings =
        AppSettings.builder()
            .jdbcUrl(jdbcUrl)
            .port(0)
            .schema(schema)
            .topic("orders")
            .relayConfig(demoRelayConfig())
            .deliveryTimeout(Duration.ofSeconds(1))
            .build();
    out.println("pgoutbox demo: an order service with a transactional outbox");
    out.println(
        "Starting "
            + (jdbcUrl == null
                ? "an embedded PostgreSQL"
                : "on the given PostgreSQL (schema " + schema + ")")
            + " and an embedded Kafka...");
    out.flush();
    long started = System.nanoTime();
    boolean passed;
    try (OrderApplication app = OrderApplication.start(settings)) {
      out.printf(
          "Order service up on %s in %.1f s%n%n",
          app.baseUri(), (System.nanoTime() - started) / 1e9);
      DemoScript script = new DemoScript(app, out);
      passed = script.run();
      script.printSummary(Duration.ofNanos(System.nanoTime() - started));
    } catch (RuntimeException e) {
      out.println();
      out.println("DEMO FAILED: " + e);
      e.printStackTrace(out);
      passed = false;
    } finally {
      if (jdbcUrl != null) {
        dropSchema(jdbcUrl, schema, out);
      }
      restoreLogs(previous);
      out.flush();
    }
    return passed ? 0 : 1;
  }

  private static void dropSchema(String url, String schema, PrintWriter out) {
    try (Connection connection = DriverManager.getConnection(url);
        Statement statement = connection.createStatement()) {
      statement.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    } catch (SQLException e) {
      out.println("(could not drop the demo schema " + schema + ": " + e.getMessage() + ")");
    }
  }

  /**
   * The relay warns on every failed attempt and Kafka's clients on every refused connection: during
   * the outage that is hundreds of lines. The demo reports both itself, so it silences them.
   */
  private static Map<String, Level> quietLogs() {
    Map<String, Level> levels =
        Map.of(
            "dev.pgoutbox.relay", Level.ERROR,
            "org.apache.kafka", Level.OFF,
            "kafka", Level.OFF,
            "state.change.logger", Level.OFF,
            "io.zonky", Level.WARN,
            "dev.pgoutbox.example.orders.KafkaLink", Level.ERROR);
    Map<String, Level> previous = new java.util.HashMap<>();
    for (Map.Entry<String, Level> e : levels.entrySet()) {
      if (LoggerFactory.getLogger(e.getKey()) instanceof ch.qos.logback.classic.Logger logger) {
        previous.put(e.getKey(), logger.getLevel());
        logger.setLevel(e.getValue());
      }
    }
    return previous;
  }

  private static void restoreLogs(Map<String, Level> previous) {
    for (Map.Entry<String, Level> e : previous.entrySet()) {
      if (LoggerFactory.getLogger(e.getKey()) instanceof ch.qos.logback.classic.Logger logger) {
        logger.setLevel(e.getValue());
      }
    }
  }
}

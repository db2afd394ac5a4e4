package dev.pgoutbox.tools.monitoring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.micrometer.MicrometerRelayMetrics;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The alerting shipped in {@code monitoring/}: promtool checks and unit-tests the rules; every
 * metric the rules and the Grafana dashboard name is in a real relay's scrape; and a real
 * Prometheus server, scraping a running relay whose publisher dead-letters an event, fires {@code
 * PgoutboxDeadLetters} (seen through Prometheus's own {@code /api/v1/alerts}).
 */
class MonitoringIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated(6);

  private static final Path MONITORING = repositoryRoot().resolve("monitoring");
  private static final Path RULES = MONITORING.resolve("prometheus-rules.yml");
  private static final Path RULE_TESTS = MONITORING.resolve("tests/prometheus-rules-test.yml");
  private static final Path DASHBOARD = MONITORING.resolve("grafana-dashboard.json");
  private static final Pattern METRIC = Pattern.compile("\\b(outbox_[a-z0-9_]+)\\b");
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final HttpClient HTTP =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

  private static PrometheusMeterRegistry registry;
  private static OutboxRelay relay;
  private static HttpServer metricsEndpoint;

  @BeforeAll
  static void startARelayWithItsMetricsEndpoint() throws IOException {
    registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    RecordingPublisher publisher =
        new RecordingPublisher()
            .decide(
                m ->
                    m.eventType().equals("poison")
                        ? PublishResult.permanent("receiver refused: schema mismatch")
                        : PublishResult.published());
    relay =
        OutboxRelay.builder()
            .name("monitoring")
            .dataSource(db.dataSource())
            .schema(db.schema())
            .publisher(publisher)
            .config(
                RelayConfig.builder()
                    .metricsRefreshInterval(Duration.ofMillis(200))
                    .pollInterval(Duration.ofMillis(100))
                    .build())
            .listener(new MicrometerRelayMetrics(registry, "monitoring"))
            .build();
    relay.start();
    metricsEndpoint = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    metricsEndpoint.createContext(
        "/metrics",
        exchange -> {
          byte[] body = registry.scrape().getBytes(StandardCharsets.UTF_8);
          exchange.getResponseHeaders().add("Content-Type", "text/plain; version=0.0.4");
          exchange.sendResponseHeaders(200, body.length);
          exchange.getResponseBody().write(body);
          exchange.close();
        });
    metricsEndpoint.start();
  }

  @AfterAll
  static void stop() {
    if (metricsEndpoint != null) {
      metricsEndpoint.stop(0);
    }
    if (relay != null) {
      relay.stop(Duration.ofSeconds(10));
    }
  }

  @BeforeEach
  void noDeadLetters() {
    db.execute("TRUNCATE outbox_events");
    Eventually.await(
        "the dead-letter gauge back at 0",
        () -> scrape().contains("outbox_dead_letters{relay=\"monitoring\"} 0.0"));
  }

  @Test
  void promtoolChecksTheRules() throws Exception {
    Result check = run(List.of(promtool(), "check", "rules", RULES.toString()));

    assertThat(check.exit()).as(check.output()).isZero();
    assertThat(check.output()).contains("SUCCESS");
  }

  @Test
  void promtoolUnitTestsOfTheAlertsPass() throws Exception {
    Result test = run(List.of(promtool(), "test", "rules", RULE_TESTS.toString()));

    assertThat(test.exit()).as(test.output()).isZero();
    // Every alert of the rules file has a unit test.
    String tests = Files.readString(RULE_TESTS);
    for (String alert : alerts()) {
      assertThat(tests).as("a promtool test of " + alert).contains("alertname: " + alert);
    }
  }

  @Test
  void everyMetricTheRulesAndTheDashboardUseIsInARealScrape() throws Exception {
    plantADeadLetter(); // the per-event-type counters exist once an event failed
    Eventually.await(
        "the dead-lettered counter in the scrape",
        () -> scrape().contains("outbox_events_dead_lettered_total{"));
    Set<String> scraped = new TreeSet<>();
    for (String line : scrape().split("\n")) {
      if (!line.startsWith("#") && !line.isBlank()) {
        scraped.add(line.split("[{ ]", 2)[0]);
      }
    }

    Set<String> used = new TreeSet<>();
    used.addAll(metricNames(ruleExpressions()));
    used.addAll(metricNames(dashboardExpressions()));

    assertThat(used).hasSizeGreaterThan(15);
    assertThat(scraped).as("metric names in a relay's scrape").containsAll(used);
  }

  @Test
  void aRealPrometheusScrapingTheRelayFiresTheDeadLetterAlert(@TempDir Path dir) throws Exception {
    String prometheus = tool("prometheus");
    // The shipped rules with every `for:` cut to 0s, evaluated each second.
    Files.writeString(
        dir.resolve("rules.yml"),
        Files.readString(RULES).replaceAll("(?m)^(\\s+)for: \\S+$", "$1for: 0s"));
    int port = freePort();
    Files.writeString(
        dir.resolve("prometheus.yml"),
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            + "rule_files:\n  - rules.yml\n"
            + "scrape_configs:\n  - job_name: pgoutbox-test\n    static_configs:\n"
            + "      - targets: ['127.0.0.1:"
            + metricsEndpoint.getAddress().getPort()
            + "']\n");
    File log = dir.resolve("prometheus.log").toFile();
    Process server =
        new ProcessBuilder(
                prometheus,
                "--config.file=" + dir.resolve("prometheus.yml"),
                "--storage.tsdb.path=" + dir.resolve("data"),
                "--web.listen-address=127.0.0.1:" + port,
                "--log.level=warn")
            .redirectErrorStream(true)
            .redirectOutput(log)
            .start();
    String api = "http://127.0.0.1:" + port;
    try {
      Eventually.until(
          Duration.ofSeconds(20),
          () -> get(api + "/-/ready").startsWith("Prometheus"),
          () -> "Prometheus not ready: " + tail(log));
      Eventually.until(
          Duration.ofSeconds(20),
          () -> "0".equals(value(api, "outbox_dead_letters{job=\"pgoutbox-test\"}")),
          () -> "no scrape of the relay with 0 dead letters: " + tail(log));
      assertThat(firing(api, "PgoutboxDeadLetters")).as("before any dead letter").isEmpty();

      plantADeadLetter();

      Eventually.until(
          Duration.ofSeconds(30),
          () -> !firing(api, "PgoutboxDeadLetters").isEmpty(),
          () -> "PgoutboxDeadLetters never fired: " + get(api + "/api/v1/alerts"));
      JsonNode alert = firing(api, "PgoutboxDeadLetters").get(0);
      assertThat(alert.get("labels").get("job").asText()).isEqualTo("pgoutbox-test");
      assertThat(alert.get("labels").get("severity").asText()).isEqualTo("warning");
      assertThat(alert.get("annotations").get("summary").asText())
          .isEqualTo("pgoutbox-test: 1 dead letter(s)");
      assertThat(firing(api, "PgoutboxRelayHeartbeatMissing"))
          .as("a relay that beats does not trip the heartbeat alert")
          .isEmpty();
    } finally {
      server.destroy();
      if (!server.waitFor(10, TimeUnit.SECONDS)) {
        server.destroyForcibly();
      }
    }
  }

  private static void plantADeadLetter() {
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    db.dsl()
        .transaction(
            tx ->
                outbox.append(
                    tx.dsl(), OutboxEvent.of("order", "42", "poison", Map.of("id", "42"))));
    Eventually.await(
        "the poison event dead-lettered",
        () -> db.queryLong("select count(*) from outbox_dead_letters") == 1);
  }

  private static List<JsonNode> firing(String api, String alertName) {
    List<JsonNode> found = new ArrayList<>();
    try {
      for (JsonNode alert : JSON.readTree(get(api + "/api/v1/alerts")).get("data").get("alerts")) {
        if (alert.get("labels").get("alertname").asText().equals(alertName)
            && alert.get("state").asText().equals("firing")) {
          found.add(alert);
        }
      }
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    return found;
  }

  /** The value of an instant query's first sample, or null. */
  private static String value(String api, String query) {
    try {
      JsonNode result =
          JSON.readTree(
                  get(
                      api
                          + "/api/v1/query?query="
                          + URLEncoder.encode(query, StandardCharsets.UTF_8)))
              .get("data")
              .get("result");
      return result.isEmpty() ? null : result.get(0).get("value").get(1).asText();
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  private static String get(String url) {
    try {
      HttpResponse<String> response =
          HTTP.send(
              HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(5)).build(),
              HttpResponse.BodyHandlers.ofString());
      return response.body();
    } catch (IOException e) {
      return "";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "";
    }
  }

  private static String scrape() {
    return registry.scrape();
  }

  /** The PromQL of every rule, continuation lines included. */
  private static List<String> ruleExpressions() throws IOException {
    List<String> expressions = new ArrayList<>();
    List<String> lines = Files.readAllLines(RULES);
    for (int i = 0; i < lines.size(); i++) {
      Matcher expr = Pattern.compile("^(\\s*)expr:\\s*(.*)$").matcher(lines.get(i));
      if (!expr.matches()) {
        continue;
      }
      StringBuilder text = new StringBuilder(expr.group(2));
      int indent = expr.group(1).length();
      while (i + 1 < lines.size()
          && !lines.get(i + 1).isBlank()
          && lines.get(i + 1).length() - lines.get(i + 1).stripLeading().length() > indent) {
        text.append(' ').append(lines.get(++i).strip());
      }
      expressions.add(text.toString());
    }
    assertThat(expressions).hasSize(alerts().size());
    return expressions;
  }

  private static List<String> dashboardExpressions() throws IOException {
    List<String> expressions = new ArrayList<>();
    JsonNode dashboard = JSON.readTree(DASHBOARD.toFile());
    for (JsonNode panel : dashboard.get("panels")) {
      for (JsonNode target : panel.get("targets")) {
        expressions.add(target.get("expr").asText());
      }
    }
    for (JsonNode variable : dashboard.get("templating").get("list")) {
      expressions.add(variable.get("definition").asText());
    }
    return expressions;
  }

  private static List<String> alerts() throws IOException {
    List<String> alerts = new ArrayList<>();
    Matcher m = Pattern.compile("(?m)^\\s*- alert: (\\S+)$").matcher(Files.readString(RULES));
    while (m.find()) {
      alerts.add(m.group(1));
    }
    return alerts;
  }

  private static Set<String> metricNames(List<String> expressions) {
    Set<String> names = new TreeSet<>();
    for (String expression : expressions) {
      Matcher m = METRIC.matcher(expression);
      while (m.find()) {
        names.add(m.group(1));
      }
    }
    return names;
  }

  private static String promtool() {
    return tool("promtool");
  }

  /** A binary of Debian's {@code prometheus} package, or a failure saying how to get it. */
  private static String tool(String name) {
    for (String dir : (System.getenv().getOrDefault("PATH", "") + ":/usr/bin").split(":")) {
      File candidate = new File(dir, name);
      if (candidate.canExecute()) {
        return candidate.getPath();
      }
    }
    return fail(
        name
            + " not found on PATH: install Debian's prometheus package (apt-get install"
            + " prometheus), as .ci/run does");
  }

  private record Result(int exit, String output) {}

  private static Result run(List<String> command) throws IOException, InterruptedException {
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!process.waitFor(30, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      fail(command + " did not finish in 30 s: " + output);
    }
    return new Result(process.exitValue(), output);
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    }
  }

  private static String tail(File log) {
    try {
      String text = Files.readString(log.toPath());
      return text.length() > 2000 ? text.substring(text.length() - 2000) : text;
    } catch (IOException e) {
      return "(no log)";
    }
  }

  /** The repository root: the module's parent, where {@code monitoring/} lives. */
  private static Path repositoryRoot() {
    Path dir = Path.of("").toAbsolutePath();
    while (dir != null && !Files.isDirectory(dir.resolve("monitoring"))) {
      dir = dir.getParent();
    }
    if (dir == null) {
      throw new IllegalStateException("no monitoring/ above " + Path.of("").toAbsolutePath());
    }
    return dir;
  }
}

package dev.pgoutbox.tools.admin;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.BrowserScript;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import dev.pgoutbox.tools.Main;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import picocli.CommandLine;

/**
 * The web console served by {@code admin serve}, driven in headless Chromium (Playwright) on a real
 * PostgreSQL with a relay publishing to a recording publisher: the page shows a planted dead letter
 * (its hostile aggregate id and error as text), a retry from the page publishes it, a discard
 * removes another, and a cross-site request, a write without the token and a read-only console are
 * refused. Screenshots of each page land in {@code target/console-screenshots}.
 */
class ConsoleBrowserIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated(4);

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Path BROWSER = Path.of("src/test/browser");
  private static final String TOKEN = "console-test-token-0123456789";
  private static final String XSS_AGGREGATE = "<img src=x onerror=\"window.__pwned=1;alert(1)\">";
  private static final String XSS_ERROR = "<script>window.__pwned=1</script> broker said 500";

  private static final RecordingPublisher publisher = new RecordingPublisher();
  private static OutboxRelay relay;
  private static Server writable;
  private static Server readOnly;

  @BeforeAll
  static void startHosts() {
    BrowserScript.requireTools(BROWSER.toAbsolutePath());
    relay =
        OutboxRelay.builder()
            .name("console")
            .dataSource(db.dataSource())
            .schema(db.schema())
            .publisher(publisher)
            .config(RelayConfig.builder().pollInterval(Duration.ofMillis(200)).build())
            .build();
    relay.start();
    writable = Server.start("--writes", "--token", TOKEN);
    readOnly = Server.start();
  }

  @AfterAll
  static void stopHosts() {
    if (writable != null) {
      writable.stop();
    }
    if (readOnly != null) {
      readOnly.stop();
    }
    if (relay != null) {
      relay.close();
    }
  }

  @Test
  void thePageShowsRetriesAndDiscardsDeadLettersAndRefusesWhatItMust() throws Exception {
    UUID dead = deadLetter("order", XSS_AGGREGATE, "OrderPlaced", XSS_ERROR);
    UUID discarded = deadLetter("order", "7", "OrderCancelled", "schema registry said 404");
    UUID untouched = deadLetter("invoice", "9", "InvoiceSent", "timeout after 30 s");

    Path screenshots = Path.of("target/console-screenshots").toAbsolutePath();
    Files.createDirectories(screenshots);
    Map<String, Object> config = new LinkedHashMap<>();
    config.put("writeUrl", writable.url);
    config.put("token", TOKEN);
    config.put("readOnlyUrl", readOnly.url);
    config.put("deadId", dead.toString());
    config.put("discardId", discarded.toString());
    config.put("untouchedId", untouched.toString());
    config.put("untouchedAggregateType", "invoice");
    config.put("untouchedAggregateId", "9");
    config.put("screenshots", screenshots.toString());
    config.put("userDataDir", Files.createTempDirectory("pgoutbox-chromium").toString());
    Path configFile = Files.createTempFile("console-test", ".json");
    JSON.writeValue(configFile.toFile(), config);

    String output =
        BrowserScript.run(BROWSER.resolve("console-test.mjs"), configFile, Duration.ofMinutes(4));
    JsonNode seen = JSON.readTree(output);
    assertThat(seen.path("ok").asBoolean()).as(output).isTrue();

    // The overview and the planted dead letter; hostile data shown as text, never run.
    assertThat(seen.get("overviewDeadLetters").asText()).isEqualTo("3");
    assertThat(seen.get("overviewHasChart").asInt()).isEqualTo(2);
    assertThat(seen.get("tokenLeftInUrl").asBoolean()).isFalse();
    assertThat(seen.get("xssAggregateText").asText()).isEqualTo("order/" + XSS_AGGREGATE);
    assertThat(seen.get("xssErrorText").asText()).isEqualTo(XSS_ERROR);
    assertThat(seen.get("injectedElements").asInt()).isZero();
    assertThat(seen.get("pwned").asBoolean()).isFalse();
    assertThat(seen.get("dialogs")).isEmpty();
    assertThat(seen.get("pageErrors")).as(output).isEmpty();
    assertThat(seen.get("eventTitle").asText()).contains(dead.toString());
    assertThat(seen.get("eventPayloadHidden").asInt()).isEqualTo(1);
    assertThat(seen.get("blockedReason").asText()).startsWith("dead since");
    assertThat(seen.get("relaysText").asText()).contains("console").contains("alive");

    // A retry from the page publishes the event; a discard removes the other.
    assertThat(seen.at("/retry/confirm").asText()).startsWith("Retry 1 event");
    assertThat(seen.at("/retry/flash").asText()).startsWith("Retried 1 of 1");
    Eventually.await(
        "the relay to publish the retried event",
        () -> publisher.delivered().stream().anyMatch(m -> m.id().equals(dead)));
    assertThat(seen.at("/discard/confirm").asText()).startsWith("Discard 1 event");
    assertThat(seen.at("/discard/flash").asText()).startsWith("Discarded 1 of 1");
    assertThat(seen.get("filteredRowId").asText()).isEqualTo(untouched.toString());
    assertThat(db.queryLong("select count(*) from outbox_events where id = '" + discarded + "'"))
        .isZero();

    // Refused: cross-site (the browser blocks the fetch, the console the form), no token,
    // read-only.
    assertThat(seen.get("crossSiteFetch").asText()).startsWith("blocked");
    assertThat(seen.get("crossSiteFormStatus").asInt()).isEqualTo(403);
    assertThat(seen.get("crossSiteFormBody").asText()).contains("cross-site");
    assertThat(seen.at("/unauthorized/error").asBoolean()).isTrue();
    assertThat(seen.at("/unauthorized/flash").asText()).contains("needs the token");
    assertThat(seen.get("readOnlyMode").asText()).isEqualTo("read-only");
    assertThat(seen.get("readOnlyButtonsDisabled").asInt())
        .isEqualTo(seen.get("readOnlyButtons").asInt())
        .isPositive();
    assertThat(seen.at("/readOnlyRetry/status").asInt()).isEqualTo(403);
    assertThat(seen.at("/readOnlyRetry/body/code").asText()).isEqualTo("read-only");
    assertThat(seen.at("/readOnlyDiscard/status").asInt()).isEqualTo(403);
    assertThat(
            db.queryLong(
                "select count(*) from outbox_events where id = '"
                    + untouched
                    + "' and dead_at is not null"))
        .as("the event every refused write aimed at is still dead")
        .isEqualTo(1);
    assertThat(seen.get("screenshots")).hasSize(6);
  }

  @Test
  void aWriteWithTheTokenButAForeignOriginIsRefused() throws Exception {
    UUID target = deadLetter("order", "cross-origin", "OrderPlaced", "boom");
    HttpResponse<String> answer =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(URI.create(writable.url + "api/discard"))
                    .header("Content-Type", "application/json")
                    .header("X-Pgoutbox-Console", "1")
                    .header("X-Pgoutbox-Token", TOKEN)
                    .header("Origin", "http://evil.test")
                    .POST(HttpRequest.BodyPublishers.ofString("{\"ids\":[\"" + target + "\"]}"))
                    .build(),
                HttpResponse.BodyHandlers.ofString());
    assertThat(answer.statusCode()).isEqualTo(403);
    assertThat(answer.body()).contains("cross-site").contains("evil.test");
    assertThat(db.queryLong("select count(*) from outbox_events where id = '" + target + "'"))
        .isEqualTo(1);
  }

  @Test
  void aGeneratedTokenIsPrintedAndEveryWriteNeedsIt() throws Exception {
    Server generated = Server.start("--writes");
    try {
      Matcher printed = Pattern.compile("Write token: (\\S+)").matcher(generated.out.toString());
      assertThat(printed.find()).as(generated.out.toString()).isTrue();
      String token = printed.group(1);
      assertThat(token).hasSizeGreaterThanOrEqualTo(32);
      assertThat(generated.out.toString()).contains("Open " + generated.url + "#token=" + token);
      UUID target = deadLetter("order", "generated-token", "OrderPlaced", "boom");
      String body = "{\"ids\":[\"" + target + "\"]}";

      HttpResponse<String> without = write(generated.url, body, null);
      HttpResponse<String> wrong = write(generated.url, body, token + "x");
      assertThat(without.statusCode()).isEqualTo(403);
      assertThat(without.body()).contains("needs the token");
      assertThat(wrong.statusCode()).isEqualTo(403);
      assertThat(wrong.body()).contains("token is wrong");
      assertThat(db.queryLong("select count(*) from outbox_events where id = '" + target + "'"))
          .isEqualTo(1);

      HttpResponse<String> with = write(generated.url, body, token);
      assertThat(with.statusCode()).as(with.body()).isEqualTo(200);
      assertThat(db.queryLong("select count(*) from outbox_events where id = '" + target + "'"))
          .isZero();
    } finally {
      generated.stop();
    }
  }

  @Test
  void aTokenShorterThanSixteenCharactersIsRefusedNamingTheFlag() {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine commandLine = new CommandLine(new Main());
    commandLine.setOut(new PrintWriter(out, true));
    commandLine.setErr(new PrintWriter(err, true));
    int exit =
        commandLine.execute(
            "admin", "serve", "--jdbc-url", db.jdbcUrl(), "--writes", "--token", "short");
    assertThat(exit).isEqualTo(2);
    assertThat(err.toString()).contains("--token (PGOUTBOX_CONSOLE_TOKEN) must be at least 16");
  }

  private static HttpResponse<String> write(String url, String body, String token)
      throws Exception {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(URI.create(url + "api/discard"))
            .header("Content-Type", "application/json")
            .header("X-Pgoutbox-Console", "1")
            .POST(HttpRequest.BodyPublishers.ofString(body));
    if (token != null) {
      request.header("X-Pgoutbox-Token", token);
    }
    return HttpClient.newHttpClient().send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  private static UUID deadLetter(
      String aggregateType, String aggregateId, String eventType, String error) {
    UUID id = UUID.randomUUID();
    db.execute(
        "insert into outbox_events (id, aggregate_type, aggregate_id, event_type, payload,"
            + " dead_at, attempts, last_error) values ('"
            + id
            + "', '"
            + aggregateType
            + "', '"
            + aggregateId.replace("'", "''")
            + "', '"
            + eventType
            + "', '{\"card\": \"card-4242\"}', clock_timestamp(), 10, '"
            + error.replace("'", "''")
            + "')");
    return id;
  }

  /** {@code admin serve} running in this JVM on a free port. */
  private static final class Server {
    private static final Pattern SERVING = Pattern.compile("Serving (http://\\S+/)");
    final Thread thread;
    final String url;
    final StringWriter out;

    private Server(Thread thread, String url, StringWriter out) {
      this.thread = thread;
      this.url = url;
      this.out = out;
    }

    static Server start(String... options) {
      StringWriter out = new StringWriter();
      StringWriter err = new StringWriter();
      CommandLine commandLine = new CommandLine(new Main());
      commandLine.setOut(new PrintWriter(out, true));
      commandLine.setErr(new PrintWriter(err, true));
      String[] args = new String[8 + options.length];
      System.arraycopy(
          new String[] {
            "admin", "serve", "--jdbc-url", db.jdbcUrl(), "--schema", db.schema(), "--port", "0"
          },
          0,
          args,
          0,
          8);
      System.arraycopy(options, 0, args, 8, options.length);
      Thread thread = Thread.ofPlatform().daemon().start(() -> commandLine.execute(args));
      String[] url = new String[1];
      Eventually.until(
          Duration.ofSeconds(30),
          () -> {
            Matcher m = SERVING.matcher(out.toString());
            if (m.find()) {
              url[0] = m.group(1);
              return true;
            }
            return !thread.isAlive();
          },
          () -> "admin serve did not start; out: " + out + " err: " + err);
      assertThat(url[0]).as("admin serve: " + out + err).isNotNull();
      return new Server(thread, url[0], out);
    }

    void stop() {
      thread.interrupt();
    }
  }
}

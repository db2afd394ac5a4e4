package dev.pgoutbox.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The {@code outbox} Actuator endpoint with writes and payloads turned on, and the relay's metrics,
 * over HTTP on a real web server: dead letters listed page by page with their payloads, one retried
 * and published, one discarded, each write logged with its caller and rows; the relay's counters in
 * {@code /actuator/prometheus}.
 */
@SpringBootTest(
    classes = OutboxEndpointIT.App.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
      "pgoutbox.relay.name=boot-endpoint",
      "pgoutbox.relay.metrics-refresh-interval=100ms",
      "management.endpoints.web.exposure.include=health,outbox,prometheus",
      "pgoutbox.actuator.writes-enabled=true",
      "pgoutbox.actuator.show-payloads=true"
    })
@DirtiesContext
class OutboxEndpointIT {

  @RegisterExtension static final TestSchema db = TestSchema.empty();

  private static final Duration WITHIN = Duration.ofSeconds(20);

  /** Refuses (permanently) every event of an aggregate named {@code poison-*} while told to. */
  static final class PoisonPublisher implements Publisher {
    final Set<String> published = ConcurrentHashMap.newKeySet();
    volatile boolean refusePoison = true;

    @Override
    public CompletionStage<List<PublishResult>> publish(List<OutboxMessage> batch) {
      List<PublishResult> results = new ArrayList<>();
      for (OutboxMessage message : batch) {
        if (refusePoison && message.aggregateId().startsWith("poison-")) {
          results.add(PublishResult.permanent("refused by the test broker"));
        } else {
          published.add(message.aggregateId());
          results.add(PublishResult.published());
        }
      }
      return CompletableFuture.completedFuture(results);
    }

    @Override
    public void close() {}
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import(Orders.class)
  static class App {
    @Bean
    PoisonPublisher publisher() {
      return new PoisonPublisher();
    }
  }

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    BootTests.database(registry, db);
  }

  @BeforeAll
  static void ordersTable() {
    db.execute(Orders.TABLE_DDL.formatted(db.schema()));
  }

  @AfterAll
  static void stopTheRelay(@Autowired OutboxRelayLifecycle relay) {
    relay.stop(); // before the schema is dropped
  }

  @Value("${local.server.port}")
  int port;

  @Autowired Orders orders;
  @Autowired PoisonPublisher publisher;

  private final HttpClient http = HttpClient.newHttpClient();
  private final ObjectMapper json = new ObjectMapper();

  @Test
  void listsRetriesAndDiscardsDeadLettersOverHttp() throws Exception {
    try (EndpointTests.EndpointLog log = new EndpointTests.EndpointLog()) {
      listRetryAndDiscard();
      assertThat(log.lines())
          .anySatisfy(
              line ->
                  assertThat(line)
                      .startsWith("INFO ")
                      .contains("Retry of event ")
                      .contains(" by anonymous: 1 row"))
          .anySatisfy(
              line ->
                  assertThat(line)
                      .startsWith("WARN ")
                      .contains("Discard of event ")
                      .contains(" by anonymous: 1 row"));
    }
  }

  private void listRetryAndDiscard() throws Exception {
    UUID first = orders.place("poison-1", false);
    UUID second = orders.place("poison-2", false);
    Eventually.await(
        "both events dead",
        WITHIN,
        () -> count("dead_at IS NOT NULL AND aggregate_id LIKE 'poison-%'") == 2);

    JsonNode stats = get("/actuator/outbox", 200);
    assertThat(stats.get("schema").asText()).isEqualTo(db.schema());
    assertThat(stats.get("deadLetters").asLong()).isEqualTo(2);
    assertThat(stats.get("blockedAggregates").asLong()).isEqualTo(2);
    JsonNode relay = stats.get("relays").get(0);
    assertThat(relay.get("name").asText()).isEqualTo("boot-endpoint");
    assertThat(relay.get("running").asBoolean()).isTrue();
    assertThat(relay.get("deadLettered").asLong()).isEqualTo(2);

    JsonNode page1 = get("/actuator/outbox/dead-letters?limit=1", 200);
    assertThat(page1.get("deadLetters")).hasSize(1);
    JsonNode dead1 = page1.get("deadLetters").get(0);
    assertThat(dead1.get("id").asText()).isEqualTo(first.toString());
    assertThat(dead1.get("aggregateId").asText()).isEqualTo("poison-1");
    assertThat(dead1.get("eventType").asText()).isEqualTo("order.placed");
    assertThat(dead1.get("attempts").asInt()).isEqualTo(1);
    assertThat(dead1.get("lastError").asText()).contains("refused by the test broker");
    assertThat(json.readTree(dead1.get("payload").asText()).get("id").asText())
        .isEqualTo("poison-1");
    long next = page1.get("next").asLong();
    JsonNode page2 = get("/actuator/outbox/dead-letters?limit=1&after=" + next, 200);
    assertThat(page2.get("deadLetters").get(0).get("id").asText()).isEqualTo(second.toString());
    JsonNode page3 = get("/actuator/outbox/dead-letters?after=" + page2.get("next").asLong(), 200);
    assertThat(page3.get("deadLetters")).isEmpty();
    assertThat(page3.has("next")).as("next, after the last page").isFalse();

    publisher.refusePoison = false;
    JsonNode retried = send("POST", "/actuator/outbox/dead-letters/" + first, 200);
    assertThat(retried.get("action").asText()).isEqualTo("retry");
    assertThat(retried.get("found").asBoolean()).isTrue();
    Eventually.await(
        "the retried event published", WITHIN, () -> publisher.published.contains("poison-1"));

    JsonNode discarded = send("DELETE", "/actuator/outbox/dead-letters/" + second, 200);
    assertThat(discarded.get("action").asText()).isEqualTo("discard");
    assertThat(discarded.get("found").asBoolean()).isTrue();
    assertThat(count("aggregate_id = 'poison-2'")).isZero();
    assertThat(publisher.published).doesNotContain("poison-2");

    assertThat(get("/actuator/outbox/dead-letters", 200).get("deadLetters")).isEmpty();
    Eventually.await("the retried event marked", WITHIN, () -> count("processed_at IS NULL") == 0);
    JsonNode after = get("/actuator/outbox", 200);
    assertThat(after.get("deadLetters").asLong()).isZero();
    assertThat(after.get("pending").asLong()).isZero();
    assertThat(after.get("relays").get(0).get("published").asLong()).isGreaterThanOrEqualTo(1);
  }

  @Test
  void unknownIdsAndSectionsAreAnsweredNotGuessed() throws Exception {
    UUID nobody = UUID.randomUUID();
    try (EndpointTests.EndpointLog log = new EndpointTests.EndpointLog()) {
      JsonNode unknown = send("POST", "/actuator/outbox/dead-letters/" + nobody, 200);
      assertThat(unknown.get("found").asBoolean()).isFalse();
      assertThat(log.lines())
          .anySatisfy(
              line ->
                  assertThat(line).contains("Retry of event " + nobody + " by anonymous: 0 rows"));
    }
    assertThat(status("GET", "/actuator/outbox/letters")).isEqualTo(400);
    assertThat(status("GET", "/actuator/outbox/dead-letters?limit=0")).isEqualTo(400);
    assertThat(status("POST", "/actuator/outbox/dead-letters/not-a-uuid")).isEqualTo(400);
  }

  @Test
  void aRetryABrowserCouldSendCrossSiteIsRefusedAndWritesNothing() throws Exception {
    // A cross-site form or no-cors fetch can POST only without a body type or with one of these;
    // application/json needs a CORS preflight, which the endpoint does not answer.
    UUID id = EndpointTests.plantDeadLetter(db, "cross-site-1");
    String before = EndpointTests.row(db, id);
    EndpointTests.Http raw = new EndpointTests.Http(port);
    String path = "/actuator/outbox/dead-letters/" + id;
    for (String type : new String[] {null, "text/plain", "application/x-www-form-urlencoded"}) {
      EndpointTests.Response answer = raw.send("POST", path, null, type);
      assertThat(answer.status())
          .as("POST, Content-Type %s: %s", type, answer.body())
          .isEqualTo(415);
    }
    // And a page of another site may not send the JSON: its preflight is granted nothing.
    HttpResponse<Void> preflight =
        http.send(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .method("OPTIONS", HttpRequest.BodyPublishers.noBody())
                .header("Origin", "https://attacker.example")
                .header("Access-Control-Request-Method", "POST")
                .header("Access-Control-Request-Headers", "content-type")
                .build(),
            HttpResponse.BodyHandlers.discarding());
    assertThat(preflight.headers().firstValue("Access-Control-Allow-Origin"))
        .as("preflight %s", preflight.headers().map())
        .isEmpty();
    // Without a boundary the multipart parser fails first; refused all the same.
    assertThat(raw.send("POST", path, null, "multipart/form-data").status()).isGreaterThan(399);
    assertThat(EndpointTests.row(db, id)).isEqualTo(before);

    assertThat(raw.send("POST", path).json().get("found").asBoolean()).isTrue();
    Eventually.await(
        "the retried cross-site-1 published",
        WITHIN,
        () -> count("aggregate_id = 'cross-site-1' AND processed_at IS NOT NULL") == 1);
  }

  @Test
  void relayMetricsAppearInPrometheus() throws Exception {
    orders.place("metered-1", false);
    Eventually.await(
        "metered-1 published", WITHIN, () -> publisher.published.contains("metered-1"));
    Eventually.until(
        WITHIN,
        () -> sample("outbox_events_published_total") >= 1 && sample("outbox_events_pending") == 0,
        () -> "outbox metrics in /actuator/prometheus:\n" + scrape());
    assertThat(scrape())
        .contains("outbox_batch_duration_seconds_count{")
        .contains("outbox_dead_letters{");
  }

  /** The value of {@code metric} for this test's relay in the Prometheus scrape, or -1. */
  private double sample(String metric) {
    Matcher m =
        Pattern.compile("(?m)^" + metric + "\\{[^}]*relay=\"boot-endpoint\"[^}]*\\} ([0-9.eE+-]+)$")
            .matcher(scrape());
    return m.find() ? Double.parseDouble(m.group(1)) : -1;
  }

  private String scrape() {
    try {
      HttpResponse<String> response =
          http.send(request("GET", "/actuator/prometheus"), HttpResponse.BodyHandlers.ofString());
      assertThat(response.statusCode()).isEqualTo(200);
      return response.body();
    } catch (IOException e) {
      throw new AssertionError(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  private JsonNode get(String path, int expectedStatus) throws Exception {
    return send("GET", path, expectedStatus);
  }

  private JsonNode send(String method, String path, int expectedStatus) throws Exception {
    HttpResponse<String> response =
        http.send(request(method, path), HttpResponse.BodyHandlers.ofString());
    assertThat(response.statusCode())
        .as("%s %s: %s", method, path, response.body())
        .isEqualTo(expectedStatus);
    return json.readTree(response.body());
  }

  private int status(String method, String path) throws Exception {
    return http.send(request(method, path), HttpResponse.BodyHandlers.discarding()).statusCode();
  }

  private HttpRequest request(String method, String path) {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
            .method(method, HttpRequest.BodyPublishers.noBody());
    if (method.equals("POST")) {
      request.header("Content-Type", "application/json");
    }
    return request.build();
  }

  private static long count(String where) {
    return db.queryLong("SELECT count(*) FROM " + db.schema() + ".outbox_events WHERE " + where);
  }
}

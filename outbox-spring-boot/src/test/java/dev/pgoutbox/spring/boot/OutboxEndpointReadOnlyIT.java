package dev.pgoutbox.spring.boot;

import static dev.pgoutbox.spring.boot.EndpointTests.HEADER_SECRET;
import static dev.pgoutbox.spring.boot.EndpointTests.PAYLOAD_SECRET;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.spring.boot.EndpointTests.EndpointLog;
import dev.pgoutbox.spring.boot.EndpointTests.Http;
import dev.pgoutbox.spring.boot.EndpointTests.Response;
import dev.pgoutbox.testing.TestSchema;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The {@code outbox} endpoint as the starter configures it when told nothing, exposed over HTTP
 * with no Spring Security: retry and discard of a dead letter written by hand are refused with 403
 * and leave its row exactly as it was; the list shows the dead letter without its payload, and no
 * listing shows its headers.
 */
@SpringBootTest(
    classes = OutboxEndpointReadOnlyIT.App.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
      "pgoutbox.relay.name=boot-endpoint-read-only",
      "management.endpoints.web.exposure.include=*"
    })
@DirtiesContext
class OutboxEndpointReadOnlyIT {

  @RegisterExtension static final TestSchema db = TestSchema.empty();

  /** Publishes everything it is given, and remembers the ids. */
  static final class RecordingPublisher implements Publisher {
    final Set<UUID> published = ConcurrentHashMap.newKeySet();

    @Override
    public CompletionStage<List<PublishResult>> publish(List<OutboxMessage> batch) {
      List<PublishResult> results = new ArrayList<>();
      for (OutboxMessage message : batch) {
        published.add(message.id());
        results.add(PublishResult.published());
      }
      return CompletableFuture.completedFuture(results);
    }

    @Override
    public void close() {}
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class App {
    @Bean
    RecordingPublisher publisher() {
      return new RecordingPublisher();
    }
  }

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    BootTests.database(registry, db);
  }

  @AfterAll
  static void stopTheRelay(@Autowired OutboxRelayLifecycle relay) {
    relay.stop(); // before the schema is dropped
  }

  @Value("${local.server.port}")
  int port;

  @Autowired RecordingPublisher publisher;
  @Autowired OutboxEndpoint endpoint;

  private Http http;
  private EndpointLog log;

  @BeforeEach
  void connect() {
    http = new Http(port);
    log = new EndpointLog();
  }

  @AfterEach
  void detach() {
    log.close();
  }

  @Test
  void theDefaultEndpointIsReadOnlyAndHidesPayloads() {
    assertThat(endpoint.writesEnabled()).isFalse();
    assertThat(endpoint.showsPayloads()).isFalse();
  }

  @Test
  void retryAndDiscardAreRefusedWithTheirPropertyNamedAndTheRowIsUntouched() {
    UUID id = EndpointTests.plantDeadLetter(db, "refused-1");
    String before = EndpointTests.row(db, id);
    assertThat(before).isNotNull();

    for (String method : List.of("POST", "DELETE")) {
      Response refused = http.send(method, "/actuator/outbox/dead-letters/" + id);
      assertThat(refused.status()).as("%s: %s", method, refused.body()).isEqualTo(403);
      JsonNode body = refused.json();
      assertThat(body.get("status").asInt()).isEqualTo(403);
      assertThat(body.get("action").asText())
          .isEqualTo(method.equals("POST") ? "retry" : "discard");
      assertThat(body.get("message").asText())
          .contains("pgoutbox.actuator.writes-enabled")
          .contains("read-only");
    }

    assertThat(EndpointTests.row(db, id)).as("the dead letter's row").isEqualTo(before);
    assertThat(publisher.published).doesNotContain(id);
    JsonNode listed = http.send("GET", "/actuator/outbox/dead-letters").json();
    assertThat(listed.get("deadLetters").findValuesAsText("id")).contains(id.toString());
    assertThat(log.lines())
        .anySatisfy(
            line ->
                assertThat(line)
                    .startsWith("WARN ")
                    .contains("Refused retry of event " + id + " by anonymous")
                    .contains("pgoutbox.actuator.writes-enabled"))
        .anySatisfy(
            line ->
                assertThat(line)
                    .startsWith("WARN ")
                    .contains("Refused discard of event " + id + " by anonymous"))
        .noneSatisfy(line -> assertThat(line).contains(" row"));
  }

  @Test
  void refusalComesBeforeTheIdIsLookedUp() {
    // An unknown id is refused the same way: the answer tells nothing about which ids exist.
    Response refused = http.send("POST", "/actuator/outbox/dead-letters/" + UUID.randomUUID());
    assertThat(refused.status()).isEqualTo(403);
    assertThat(refused.json().has("found")).isFalse();
  }

  @Test
  void listingsCarryNeitherPayloadNorHeaders() {
    UUID id = EndpointTests.plantDeadLetter(db, "hidden-1");

    Response list = http.send("GET", "/actuator/outbox/dead-letters?limit=1000");
    assertThat(list.status()).isEqualTo(200);
    JsonNode dead = null;
    for (JsonNode d : list.json().get("deadLetters")) {
      if (d.get("id").asText().equals(id.toString())) {
        dead = d;
      }
    }
    assertThat(dead).as("the planted dead letter in %s", list.body()).isNotNull();
    assertThat(dead.has("payload")).as("payload field in %s", dead).isFalse();
    assertThat(dead.get("aggregateId").asText()).isEqualTo("hidden-1");
    assertThat(dead.get("eventType").asText()).isEqualTo("order.paid");
    assertThat(dead.get("attempts").asInt()).isEqualTo(3);
    assertThat(dead.get("lastError").asText()).isEqualTo("refused by the test broker");
    assertThat(list.body()).doesNotContain(PAYLOAD_SECRET).doesNotContain(HEADER_SECRET);

    Response stats = http.send("GET", "/actuator/outbox");
    assertThat(stats.status()).isEqualTo(200);
    assertThat(stats.json().get("deadLetters").asLong()).isGreaterThanOrEqualTo(1);
    assertThat(stats.body()).doesNotContain(PAYLOAD_SECRET).doesNotContain(HEADER_SECRET);
  }
}

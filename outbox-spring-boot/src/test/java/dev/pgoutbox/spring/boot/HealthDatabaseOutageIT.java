package dev.pgoutbox.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TcpProxy;
import dev.pgoutbox.testing.TestDatabase;
import dev.pgoutbox.testing.TestSchema;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
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
 * The {@code pgoutbox} health indicator when the application loses its PostgreSQL: the database is
 * reached through a TCP proxy the test cuts, {@code /actuator/health/pgoutbox} goes DOWN (503),
 * then UP again once the proxy lets connections through, and the relay publishes again.
 */
@SpringBootTest(
    classes = HealthDatabaseOutageIT.App.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
      "pgoutbox.relay.name=boot-health",
      "pgoutbox.relay.error-backoff-max=500ms",
      "spring.datasource.hikari.connection-timeout=1000",
      "spring.datasource.hikari.validation-timeout=500",
      "management.endpoints.web.exposure.include=health",
      "management.endpoint.health.show-details=always"
    })
@DirtiesContext
class HealthDatabaseOutageIT {

  @RegisterExtension static final TestSchema db = TestSchema.empty();

  private static final Duration WITHIN = Duration.ofSeconds(30);

  static TcpProxy proxy;

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import(Orders.class)
  static class App {
    @Bean
    RecordingPublisher publisher() {
      return new RecordingPublisher();
    }
  }

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    BootTests.database(registry, db, () -> proxy.route(db.jdbcUrl()));
  }

  @BeforeAll
  static void proxyInFrontOfPostgres() throws IOException {
    db.execute(Orders.TABLE_DDL.formatted(db.schema()));
    proxy = TcpProxy.toServerOf(TestDatabase.get().jdbcUrl());
  }

  @AfterAll
  static void stopTheRelayThenTheProxy(@Autowired OutboxRelayLifecycle relay) throws IOException {
    relay.stop(); // before the schema is dropped
    proxy.close();
  }

  @Value("${local.server.port}")
  int port;

  @Autowired Orders orders;
  @Autowired RecordingPublisher publisher;

  private final HttpClient http = HttpClient.newHttpClient();
  private final ObjectMapper json = new ObjectMapper();

  @Test
  void healthGoesDownWhenPostgresIsUnreachableAndComesBack() throws Exception {
    orders.place("before-outage", false);
    Eventually.await("before-outage published", WITHIN, () -> publisher.published("before-outage"));
    Health up = health();
    assertThat(up.httpStatus()).isEqualTo(200);
    assertThat(up.body().get("status").asText()).isEqualTo("UP");
    assertThat(up.body().at("/details/relayRunning").asBoolean()).isTrue();

    proxy.cut();
    Eventually.until(WITHIN, () -> health().httpStatus() == 503, () -> "DOWN: " + health());
    Health down = health();
    assertThat(down.body().get("status").asText()).isEqualTo("DOWN");
    assertThat(down.body().at("/details/error").asText()).isNotEmpty();

    proxy.restore();
    Eventually.until(WITHIN, () -> health().httpStatus() == 200, () -> "UP again: " + health());
    Health again = health();
    assertThat(again.body().get("status").asText()).isEqualTo("UP");
    assertThat(again.body().at("/details/relayRunning").asBoolean()).isTrue();

    orders.place("after-outage", false);
    Eventually.await("after-outage published", WITHIN, () -> publisher.published("after-outage"));
  }

  record Health(int httpStatus, JsonNode body) {}

  private Health health() {
    try {
      HttpResponse<String> response =
          http.send(
              HttpRequest.newBuilder(
                      URI.create("http://127.0.0.1:" + port + "/actuator/health/pgoutbox"))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      return new Health(response.statusCode(), json.readTree(response.body()));
    } catch (IOException e) {
      throw new AssertionError(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }
}

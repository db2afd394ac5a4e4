package dev.pgoutbox.samples.orders;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.spring.boot.OutboxRelayLifecycle;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.AmqpAdmin;
import org.springframework.amqp.rabbit.listener.RabbitListenerEndpointRegistry;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The sample end to end against a real PostgreSQL and RabbitMQ: an order placed over HTTP reaches
 * the listener through the outbox; one over the credit limit is refused and publishes nothing. Each
 * run works in a schema, exchange and queue of its own. Database: {@code PGOUTBOX_TEST_JDBC_URL},
 * else the local {@code postgres} database as user postgres.
 */
@SpringBootTest(
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
      // pgoutbox's own build runs this test too, with the sample's resources under sample-orders/.
      "spring.config.additional-location=optional:classpath:/sample-orders/",
      "spring.sql.init.schema-locations="
          + "optional:classpath:schema.sql,optional:classpath:sample-orders/schema.sql"
    })
@DirtiesContext
class OrdersApplicationIT {

  static final String RUN = "sample_orders_" + UUID.randomUUID().toString().substring(0, 8);
  static final String JDBC_URL =
      System.getenv()
          .getOrDefault(
              "PGOUTBOX_TEST_JDBC_URL",
              "jdbc:postgresql://localhost:5432/postgres?user=postgres&password=postgres");

  @DynamicPropertySource
  static void ownSchemaExchangeAndQueue(DynamicPropertyRegistry registry) {
    registry.add(
        "spring.datasource.url",
        () -> JDBC_URL + (JDBC_URL.contains("?") ? "&" : "?") + "currentSchema=" + RUN);
    registry.add("pgoutbox.schema", () -> RUN);
    registry.add("orders.exchange", () -> RUN);
    registry.add("orders.queue", () -> RUN + ".placed");
    registry.add("spring.rabbitmq.host", () -> env("PGOUTBOX_TEST_RABBITMQ_HOST", "127.0.0.1"));
    registry.add("spring.rabbitmq.port", () -> env("PGOUTBOX_TEST_RABBITMQ_PORT", "5672"));
  }

  @BeforeAll
  static void schema() throws SQLException {
    sql("CREATE SCHEMA " + RUN);
  }

  @AfterAll
  static void cleanUp(
      @Autowired OutboxRelayLifecycle relay,
      @Autowired RabbitListenerEndpointRegistry listeners,
      @Autowired AmqpAdmin rabbit)
      throws SQLException {
    relay.stop(); // before the schema is dropped
    listeners.stop(); // before the queue is deleted
    rabbit.deleteQueue(RUN + ".placed");
    rabbit.deleteExchange(RUN);
    sql("DROP SCHEMA " + RUN + " CASCADE");
  }

  @Value("${local.server.port}")
  int port;

  @Autowired OrderPlacedListener listener;

  private final HttpClient http = HttpClient.newHttpClient();

  @Test
  void aPlacedOrderReachesTheListenerAndARefusedOnePublishesNothing() throws Exception {
    HttpResponse<String> placed = post("{\"customer\": \"ada\", \"total\": 120.50}");
    assertThat(placed.statusCode()).as(placed.body()).isEqualTo(201);
    String eventId = field(placed.body(), "eventId");
    await(
        "order.placed " + eventId + " received",
        () -> listener.receivedEventIds().contains(eventId));

    HttpResponse<String> refused = post("{\"customer\": \"ada\", \"total\": 990.00}");
    assertThat(refused.statusCode()).as(refused.body()).isEqualTo(409);

    assertThat(count("orders")).as("orders").isEqualTo(1);
    assertThat(count("outbox_events")).as("events, the refused order's rolled back").isEqualTo(1);
    await("the outbox drained", () -> count("outbox_events WHERE processed_at IS NULL") == 0);
    assertThat(listener.receivedEventIds()).containsExactly(eventId);
  }

  private HttpResponse<String> post(String json) throws Exception {
    return http.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/orders"))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(json))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  /** A string field of a flat JSON object. */
  private static String field(String json, String name) {
    int key = json.indexOf("\"" + name + "\"");
    assertThat(key).as("%s in %s", name, json).isNotNegative();
    int start = json.indexOf('"', json.indexOf(':', key)) + 1;
    return json.substring(start, json.indexOf('"', start));
  }

  private static void await(String what, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("not within 30s: " + what);
      }
      Thread.sleep(20);
    }
  }

  private static long count(String from) {
    try (Connection connection = DriverManager.getConnection(JDBC_URL);
        Statement statement = connection.createStatement();
        ResultSet rows = statement.executeQuery("SELECT count(*) FROM " + RUN + "." + from)) {
      rows.next();
      return rows.getLong(1);
    } catch (SQLException e) {
      throw new AssertionError(e);
    }
  }

  private static void sql(String statement) throws SQLException {
    try (Connection connection = DriverManager.getConnection(JDBC_URL);
        Statement s = connection.createStatement()) {
      s.execute(statement);
    }
  }

  private static String env(String name, String fallback) {
    return System.getenv().getOrDefault(name, fallback);
  }
}

package dev.pgoutbox.example.orders;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The whole service in-process: the test PostgreSQL, an in-JVM Kafka, the relay and the shipping
 * consumer, driven through the HTTP API.
 */
class OrderServiceIT {

  @RegisterExtension static final TestSchema db = TestSchema.empty();

  private static final Duration WAIT = Duration.ofSeconds(60);

  static OrderApplication app;
  static Http http;
  static String schema;

  @BeforeAll
  static void start() {
    schema = db.schema();
    app =
        OrderApplication.start(
            AppSettings.builder()
                .jdbcUrl(db.jdbcUrl())
                .schema(schema)
                .port(0)
                .relayConfig(
                    RelayConfig.builder()
                        .pollInterval(Duration.ofMillis(200))
                        .metricsRefreshInterval(Duration.ofMillis(200))
                        .build())
                .deliveryTimeout(Duration.ofSeconds(5))
                .build());
    http = new Http(app.baseUri());
  }

  @AfterAll
  static void stop() {
    if (app != null) {
      app.close();
    }
  }

  @Test
  void ordersInShipmentsOutAndMetricsMove() {
    double publishedBefore = metric("outbox_events_published_total");
    double appliedBefore = metric("shipping_events_total{outcome=\"applied\"}");

    Http.Reply created = http.post("/orders", Http.order("alice", 2));
    assertThat(created.status()).isEqualTo(201);
    JsonNode order = created.json();
    String id = order.get("id").asText();
    assertThat(order.get("status").asText()).isEqualTo("CREATED");
    assertThat(order.get("version").asInt()).isEqualTo(1);
    assertThat(order.get("total").decimalValue())
        .isEqualByComparingTo("5.75"); // 1 x 1.25 + 2 x 2.25
    assertThat(order.get("items")).hasSize(2);

    Http.Reply paid = http.post("/orders/" + id + "/payment");
    assertThat(paid.status()).isEqualTo(200);
    assertThat(paid.json().get("status").asText()).isEqualTo("PAID");
    assertThat(paid.json().get("version").asInt()).isEqualTo(2);

    Eventually.until(
        WAIT, () -> http.get("/shipments/" + id).status() == 200, () -> "no shipment for " + id);
    JsonNode shipment = http.get("/shipments/" + id).json();
    assertThat(shipment.get("status").asText()).isEqualTo("READY");
    assertThat(shipment.get("shipmentsForOrder").asInt()).isEqualTo(1);
    assertThat(http.get("/orders/" + id).json().get("status").asText()).isEqualTo("PAID");

    Eventually.until(
        WAIT,
        () -> metric("outbox_events_published_total") >= publishedBefore + 2,
        () -> "published " + metric("outbox_events_published_total"));
    assertThat(metric("shipping_events_total{outcome=\"applied\"}"))
        .isGreaterThanOrEqualTo(appliedBefore + 2);
    assertThat(metric("orders_events_appended_total{event_type=\"order.paid\"}"))
        .isGreaterThanOrEqualTo(1);
    assertThat(metric("shipping_ordering_errors_total")).isZero();
    String metrics = http.get("/metrics").text();
    assertThat(metrics)
        .contains("outbox_batch_duration_seconds")
        .contains("outbox_events_pending")
        .contains("http_server_requests_seconds_count");
  }

  @Test
  void cancellingAPaidOrderCancelsItsShipmentAndEventsStayInOrder() {
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      String id = http.post("/orders", Http.order("bob-" + i, 1)).json().get("id").asText();
      assertThat(http.post("/orders/" + id + "/payment").status()).isEqualTo(200);
      assertThat(http.post("/orders/" + id + "/cancellation").status()).isEqualTo(200);
      ids.add(id);
    }
    for (String id : ids) {
      Eventually.until(
          WAIT,
          () -> {
            Http.Reply s = http.get("/shipments/" + id);
            return s.status() == 200 && s.json().get("status").asText().equals("CANCELLED");
          },
          () -> "shipment of " + id + ": " + http.get("/shipments/" + id).text());
    }
    Eventually.until(
        WAIT, () -> Db.ordersNotCaughtUp(db, schema) == 0, () -> "orders not caught up");
    assertThat(app.shipping().orderingErrorCount()).isZero();
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM (SELECT order_id FROM "
                    + schema
                    + ".shipments GROUP BY order_id HAVING count(*) > 1) t"))
        .isZero();
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      quoteCharacter = '`',
      textBlock =
          """
          malformed JSON             | {"customerId": "x", "items": [         | $
          not an object              | [1, 2, 3]                               | $
          empty body                 | ``                                      | $
          missing customer and items | {}                                      | customerId,items
          blank customer             | {"customerId":" ","items":[{"sku":"a","quantity":1,"unitPrice":1}]} | customerId
          customer not a string      | {"customerId":42,"items":[{"sku":"a","quantity":1,"unitPrice":1}]}  | customerId
          empty items                | {"customerId":"c","items":[]}           | items
          items not an array         | {"customerId":"c","items":{}}           | items
          unknown field              | {"customerId":"c","coupon":"FREE","items":[{"sku":"a","quantity":1,"unitPrice":1}]} | coupon
          every line field bad       | {"customerId":"c","items":[{"sku":"","quantity":0,"unitPrice":-1}]} | items[0].sku,items[0].quantity,items[0].unitPrice
          fractional quantity        | {"customerId":"c","items":[{"sku":"a","quantity":1.5,"unitPrice":1}]} | items[0].quantity
          three decimals             | {"customerId":"c","items":[{"sku":"a","quantity":1,"unitPrice":1.005}]} | items[0].unitPrice
          second line bad            | {"customerId":"c","items":[{"sku":"a","quantity":1,"unitPrice":1},{"sku":"b","quantity":1}]} | items[1].unitPrice
          """)
  void invalidBodiesGet400NamingEachBadFieldAndWriteNothing(
      String description, String body, String fields) {
    long orders = db.queryLong("SELECT count(*) FROM " + schema + ".orders");
    long events = db.queryLong("SELECT count(*) FROM " + schema + ".outbox_events");

    Http.Reply reply = http.post("/orders", body == null ? "" : body);

    assertThat(reply.status()).as(reply.text()).isEqualTo(400);
    assertThat(reply.contentType()).startsWith("application/problem+json");
    JsonNode problem = reply.json();
    assertThat(problem.get("status").asInt()).isEqualTo(400);
    assertThat(problem.get("title").asText()).isNotBlank();
    assertThat(problem.get("type").asText()).isNotBlank();
    assertThat(problem.get("instance").asText()).isEqualTo("/orders");
    List<String> named = new ArrayList<>();
    problem.get("errors").forEach(e -> named.add(e.get("field").asText()));
    assertThat(named).containsExactlyInAnyOrder(fields.split(","));
    problem.get("errors").forEach(e -> assertThat(e.get("message").asText()).isNotBlank());
    assertThat(db.queryLong("SELECT count(*) FROM " + schema + ".orders")).isEqualTo(orders);
    assertThat(db.queryLong("SELECT count(*) FROM " + schema + ".outbox_events")).isEqualTo(events);
  }

  @Test
  void stateChangesTheStateForbidsGet409WithTheReasonAndWriteNothing() {
    String id = http.post("/orders", Http.order("carol", 1)).json().get("id").asText();
    assertThat(http.post("/orders/" + id + "/payment").status()).isEqualTo(200);
    long events = eventsOf(id);

    Http.Reply again = http.post("/orders/" + id + "/payment");
    assertThat(again.status()).isEqualTo(409);
    assertThat(again.contentType()).startsWith("application/problem+json");
    assertThat(again.json().get("detail").asText()).contains("already paid");

    assertThat(http.post("/orders/" + id + "/cancellation").status()).isEqualTo(200);
    Http.Reply payCancelled = http.post("/orders/" + id + "/payment");
    assertThat(payCancelled.status()).isEqualTo(409);
    assertThat(payCancelled.json().get("detail").asText()).contains("cancelled");
    Http.Reply cancelTwice = http.post("/orders/" + id + "/cancellation");
    assertThat(cancelTwice.status()).isEqualTo(409);
    assertThat(cancelTwice.json().get("detail").asText()).contains("already cancelled");
    assertThat(eventsOf(id)).isEqualTo(events + 1); // only the one cancellation
  }

  @Test
  void unknownOrdersPathsAndMethodsGetProblems() {
    UUID unknown = UUID.randomUUID();
    assertThat(http.get("/orders/" + unknown).status()).isEqualTo(404);
    assertThat(http.post("/orders/" + unknown + "/payment").status()).isEqualTo(404);
    assertThat(http.post("/orders/" + unknown + "/cancellation").status()).isEqualTo(404);
    assertThat(http.get("/shipments/" + unknown).status()).isEqualTo(404);
    Http.Reply badId = http.get("/orders/not-a-uuid");
    assertThat(badId.status()).isEqualTo(400);
    assertThat(badId.json().get("errors").get(0).get("field").asText()).isEqualTo("id");
    assertThat(http.get("/nowhere").status()).isEqualTo(404);
    Http.Reply wrongMethod = http.send("DELETE", "/orders");
    assertThat(wrongMethod.status()).isEqualTo(405);
    assertThat(http.post("/admin/outbox/dead-letters/" + unknown + "/retry").status())
        .isEqualTo(404);
  }

  @Test
  void aMessageShippingCannotUseIsRejectedAndDoesNotBlockTheOrdersBehindIt() throws Exception {
    double rejectedBefore = metric("shipping_events_total{outcome=\"rejected\"}");
    KafkaLink link = (KafkaLink) app.broker();
    try (KafkaProducer<String, byte[]> producer =
        new KafkaProducer<>(
            Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                java.util.Objects.requireNonNull(app.embeddedKafka()).bootstrapServers()),
            new StringSerializer(),
            new ByteArraySerializer())) {
      // Same key as the order below, so it sits in the same partition, ahead of its events.
      String id = http.post("/orders", Http.order("dave", 1)).json().get("id").asText();
      producer
          .send(new ProducerRecord<>(link.topic(), id, "{\"not\":\"ours\"}".getBytes(UTF_8)))
          .get(30, TimeUnit.SECONDS);
      assertThat(http.post("/orders/" + id + "/payment").status()).isEqualTo(200);

      Eventually.until(
          WAIT,
          () -> http.get("/shipments/" + id).status() == 200,
          () -> "no shipment for " + id + " behind the foreign record");
    }
    assertThat(metric("shipping_events_total{outcome=\"rejected\"}")).isEqualTo(rejectedBefore + 1);
  }

  @Test
  void healthReportsDatabaseBrokerAndRelay() {
    Http.Reply health = http.get("/health");
    assertThat(health.status()).isEqualTo(200);
    JsonNode body = health.json();
    assertThat(body.get("status").asText()).isEqualTo("UP");
    assertThat(body.at("/components/database/status").asText()).isEqualTo("UP");
    assertThat(body.at("/components/broker/status").asText()).isEqualTo("UP");
    assertThat(body.at("/components/relay/status").asText()).isEqualTo("UP");
  }

  @Test
  void adminOutboxShowsTheBacklog() {
    Http.Reply admin = http.get("/admin/outbox");
    assertThat(admin.status()).isEqualTo(200);
    JsonNode body = admin.json();
    assertThat(body.has("pending")).isTrue();
    assertThat(body.has("oldestPendingAgeSeconds")).isTrue();
    assertThat(body.get("deadLetterCount").asLong()).isZero();
    assertThat(body.get("deadLetters").isArray()).isTrue();
  }

  private static long eventsOf(String orderId) {
    return db.queryLong(
        "SELECT count(*) FROM " + schema + ".outbox_events WHERE aggregate_id = '" + orderId + "'");
  }

  /**
   * The value of one sample of {@code GET /metrics}: {@code name{label="v"}} exactly, or a bare
   * name whose only series carries labels (such as {@code relay="orders"}).
   */
  static double metric(String sample) {
    return metricIn(http.get("/metrics").text(), sample);
  }

  static double metricIn(String text, String sample) {
    for (String line : text.split("\n")) {
      if (line.startsWith("#") || line.isBlank()) {
        continue;
      }
      String series = line.substring(0, line.lastIndexOf(' '));
      if (series.equals(sample) || (!sample.contains("{") && series.startsWith(sample + "{"))) {
        return Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
      }
    }
    return 0;
  }
}

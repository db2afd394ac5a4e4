package dev.pgoutbox.example;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.pgoutbox.example.orders.KafkaLink;
import dev.pgoutbox.example.orders.OrderApplication;
import dev.pgoutbox.testing.EmbeddedKafka;
import io.micrometer.core.instrument.Counter;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.common.config.ConfigResource;

/**
 * The steps of {@code demo}, each driven through the service's HTTP API (and, for the outage, the
 * embedded Kafka), each ending with checks. Waits poll with a deadline; nothing sleeps blindly.
 */
final class DemoScript {

  private static final Duration WAIT = Duration.ofSeconds(45);
  private static final int TOPIC_LIMIT_BYTES = 16 * 1024;

  private final OrderApplication app;
  private final PrintWriter out;
  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  private final ObjectMapper json = new ObjectMapper();
  private final URI base;
  private final String schema;
  private final List<Check> checks = new ArrayList<>();

  /** Every order the demo placed, with what it did to it. */
  private final Map<UUID, Placed> placed = new LinkedHashMap<>();

  private int step;
  private int deadLettersRetried;

  private record Check(String name, boolean ok, String detail) {}

  private static final class Placed {
    boolean paid;
    boolean cancelled;
  }

  DemoScript(OrderApplication app, PrintWriter out) {
    this.app = app;
    this.out = out;
    this.base = app.baseUri();
    this.schema = app.settings().schema();
  }

  /** Runs every step; true when every check held. */
  boolean run() {
    placeOrdersAndPay();
    publishedInOrderAndShipped();
    brokerOutage();
    redelivery();
    poisonEvent();
    metricsAndHealth();
    return checks.stream().allMatch(Check::ok);
  }

  // ---- steps -----------------------------------------------------------------------------------

  private void placeOrdersAndPay() {
    header("Orders placed, paid and cancelled through the HTTP API");
    List<UUID> ids = new ArrayList<>();
    int created = 0;
    for (int i = 1; i <= 12; i++) {
      Reply reply = post("/orders", order("customer-" + i, 1 + i % 3));
      if (reply.status == 201) {
        created++;
        UUID id = UUID.fromString(reply.body.get("id").asText());
        ids.add(id);
        placed.put(id, new Placed());
      }
    }
    info("POST /orders x12 -> %d created (201)", created);
    int paid = 0;
    for (int i = 0; i < 8 && i < ids.size(); i++) {
      if (post("/orders/" + ids.get(i) + "/payment", null).status == 200) {
        placed.get(ids.get(i)).paid = true;
        paid++;
      }
    }
    info("POST /orders/{id}/payment x8 -> %d paid (200)", paid);
    int cancelled = 0;
    for (int i : new int[] {6, 7, 8}) {
      if (i < ids.size() && post("/orders/" + ids.get(i) + "/cancellation", null).status == 200) {
        placed.get(ids.get(i)).cancelled = true;
        cancelled++;
      }
    }
    info(
        "POST /orders/{id}/cancellation x3 -> %d cancelled (2 after payment, 1 before)", cancelled);
    check(
        "12 orders placed, 8 paid, 3 cancelled over HTTP",
        created == 12 && paid == 8 && cancelled == 3,
        created + " placed, " + paid + " paid, " + cancelled + " cancelled");

    long ordersBefore = count("orders");
    long eventsBefore = count("outbox_events");
    ObjectNode bad = json.createObjectNode();
    bad.put("customerId", "");
    ObjectNode item = bad.putArray("items").addObject();
    item.put("sku", "SKU-1");
    item.put("quantity", 0);
    item.put("unitPrice", -5);
    Reply invalid = post("/orders", bad);
    List<String> fields = new ArrayList<>();
    if (invalid.body.has("errors")) {
      invalid.body.get("errors").forEach(e -> fields.add(e.get("field").asText()));
    }
    info(
        "POST /orders with a blank customer, quantity 0, price -5 -> %d %s, fields %s",
        invalid.status, invalid.contentType, fields);
    check(
        "Invalid order: 400 problem+json naming each field, nothing written",
        invalid.status == 400
            && invalid.contentType.startsWith("application/problem+json")
            && fields.containsAll(List.of("customerId", "items[0].quantity", "items[0].unitPrice"))
            && count("orders") == ordersBefore
            && count("outbox_events") == eventsBefore,
        invalid.status + ", fields " + fields);

    Reply conflict = post("/orders/" + ids.get(8) + "/payment", null);
    info(
        "POST /orders/{cancelled}/payment -> %d \"%s\"",
        conflict.status, conflict.body.path("detail").asText());
    check(
        "Paying a cancelled order: 409 with the reason",
        conflict.status == 409 && conflict.body.path("detail").asText().contains("cancelled"),
        conflict.status + " " + conflict.body.path("detail").asText());
  }

  private void publishedInOrderAndShipped() {
    header("The relay publishes every event in order; shipping creates the shipments");
    long total = count("outbox_events");
    await(
        "every event published and applied by shipping",
        () -> pending() == 0 && consumerCaughtUp(),
        () -> String.format(Locale.ROOT, "published %d/%d", total - pending(), total));
    info("%d events published to Kafka topic orders, all applied by shipping", total);
    verifyShipments("Every paid order shipped exactly once, cancelled ones cancelled");
  }

  private void brokerOutage() {
    header("Kafka stopped while orders keep coming");
    EmbeddedKafka kafka = requireNonNull(app.embeddedKafka(), "the demo needs its own Kafka");
    double failedBefore = failedAttempts();
    kafka.stop();
    info("Kafka is down");
    int accepted = 0;
    List<Long> pendingSeen = new ArrayList<>();
    for (int i = 1; i <= 8; i++) {
      Reply reply = post("/orders", order("outage-customer-" + i, 2));
      if (reply.status == 201) {
        UUID id = UUID.fromString(reply.body.get("id").asText());
        placed.put(id, new Placed());
        accepted++;
        if (i % 2 == 0 && post("/orders/" + id + "/payment", null).status == 200) {
          placed.get(id).paid = true;
          accepted++;
        }
      }
      if (i % 2 == 0) {
        pendingSeen.add(pending());
      }
    }
    info("8 orders placed and 4 paid while Kafka is down: %d requests accepted", accepted);
    info("pending events as they came in: %s", pendingSeen);
    await(
        "publish attempts failing and backing off",
        () -> maxAttempts() >= 3,
        () ->
            String.format(
                Locale.ROOT,
                "pending %d, failed attempts %.0f, oldest pending event at attempt %d",
                pending(),
                failedAttempts() - failedBefore,
                maxAttempts()));
    Backoff backoff = oldestBackoff();
    info(
        "oldest pending event: %d failed attempts, next try in %d ms; last error: %s",
        backoff.attempts, backoff.retryInMillis, abbreviate(backoff.lastError, 110));
    long pendingDuringOutage = pending();
    check(
        "Kafka down: orders still taken, pending grows, attempts back off",
        accepted == 12
            && pendingDuringOutage >= 12
            && isIncreasing(pendingSeen)
            && failedAttempts() > failedBefore,
        "12/12 accepted, pending "
            + pendingSeen
            + " -> "
            + pendingDuringOutage
            + ", "
            + String.format(Locale.ROOT, "%.0f", failedAttempts() - failedBefore)
            + " failed attempts");

    header("Kafka back: the backlog drains");
    long restarted = System.nanoTime();
    kafka.restart();
    info("Kafka is up again");
    await(
        "backlog drained and applied",
        () -> pending() == 0 && consumerCaughtUp(),
        () -> String.format(Locale.ROOT, "pending %d", pending()));
    info(
        "drained %d pending events in %.1f s after the restart",
        pendingDuringOutage, (System.nanoTime() - restarted) / 1e9);
    verifyShipments("Kafka back: backlog drained, no order lost, none shipped twice");
  }

  private void redelivery() {
    header("An event delivered twice (as after a relay crash between Kafka's ack and its commit)");
    UUID orderId =
        placed.entrySet().stream()
            .filter(e -> e.getValue().paid && !e.getValue().cancelled)
            .map(Map.Entry::getKey)
            .findFirst()
            .orElseThrow();
    UUID eventId = paidEventOf(orderId);
    long duplicatesBefore = app.shipping().duplicateCount();
    long shipmentsBefore = shipmentsOf(orderId);
    sql("UPDATE " + schema + ".outbox_events SET processed_at = NULL WHERE id = '" + eventId + "'");
    info(
        "order.paid event %s marked unpublished again; the relay publishes it a second time",
        eventId);
    await(
        "shipping to receive the redelivery",
        () -> app.shipping().duplicateCount() > duplicatesBefore && pending() == 0,
        () -> "waiting for the redelivery");
    long redeliveriesIgnored = app.shipping().duplicateCount() - duplicatesBefore;
    long shipmentsAfter = shipmentsOf(orderId);
    info(
        "shipping's inbox recognised event %s and ignored it; order %s still has %d shipment",
        eventId, orderId, shipmentsAfter);
    check(
        "Redelivered event ignored by the inbox, nothing changed",
        // At least this one; Kafka may also redeliver on its own after the outage (an offset
        // commit that did not reach the broker), which the inbox ignores just the same.
        redeliveriesIgnored >= 1 && shipmentsBefore == 1 && shipmentsAfter == 1,
        "duplicates ignored " + redeliveriesIgnored + ", shipments " + shipmentsAfter);
  }

  private void poisonEvent() {
    header("A poison event: dead-lettered, then retried from the admin endpoint");
    KafkaLink kafka = (KafkaLink) app.broker();
    setTopicLimit(kafka, TOPIC_LIMIT_BYTES);
    info("topic orders accepts messages up to %d KB (max.message.bytes)", TOPIC_LIMIT_BYTES / 1024);
    Reply big = post("/orders", order("wholesale-customer", 600));
    UUID orderId = UUID.fromString(big.body.get("id").asText());
    placed.put(orderId, new Placed());
    Reply paid = post("/orders/" + orderId + "/payment", null);
    placed.get(orderId).paid = paid.status == 200;
    info(
        "POST /orders with 600 lines -> %d; its order.created event is about %d KB; then paid -> %d",
        big.status, payloadBytes(orderId) / 1024, paid.status);
    JsonNode[] admin = new JsonNode[1];
    await(
        "the broker to refuse the event",
        () -> {
          admin[0] = get("/admin/outbox").body;
          return admin[0].path("deadLetterCount").asLong() >= 1;
        },
        () -> "publishing");
    JsonNode letter = admin[0].path("deadLetters").get(0);
    info(
        "GET /admin/outbox -> pending %d, dead letters %d, blocked aggregates %d",
        admin[0].path("pending").asLong(),
        admin[0].path("deadLetterCount").asLong(),
        admin[0].path("blockedAggregates").asLong());
    info(
        "dead letter %s (%s), attempts %d: %s",
        letter.path("id").asText(),
        letter.path("eventType").asText(),
        letter.path("attempts").asInt(),
        abbreviate(letter.path("lastError").asText(), 100));
    boolean heldBack =
        admin[0].path("pending").asLong() == 1
            && admin[0].path("blockedAggregates").asLong() == 1
            && shipmentsOf(orderId) == 0;
    info("its order.paid waits behind it (strict order per order): no shipment yet");
    check(
        "Poison event dead-lettered, its order's later events held back",
        letter.path("aggregateId").asText().equals(orderId.toString())
            && letter.path("eventType").asText().equals("order.created")
            && heldBack,
        "dead letter " + letter.path("eventType").asText() + ", held back: " + heldBack);

    setTopicLimit(kafka, 1024 * 1024);
    info("the operator raises the topic's limit to 1 MB");
    UUID deadId = UUID.fromString(letter.path("id").asText());
    Reply retry = post("/admin/outbox/dead-letters/" + deadId + "/retry", null);
    info("POST /admin/outbox/dead-letters/%s/retry -> %d", deadId, retry.status);
    await(
        "the retried event and the one behind it to be published and applied",
        () -> {
          if (deadLetterCount() > 0) {
            // The broker may still be applying the new limit: the operator retries once more.
            post("/admin/outbox/dead-letters/" + deadId + "/retry", null);
          }
          return pending() == 0 && deadLetterCount() == 0 && consumerCaughtUp();
        },
        () -> String.format(Locale.ROOT, "pending %d", pending()));
    deadLettersRetried = 1;
    Reply shipment = get("/shipments/" + orderId);
    info(
        "GET /shipments/%s -> %d %s",
        orderId, shipment.status, shipment.body.path("status").asText());
    check(
        "Dead letter retried via the admin endpoint, then its order shipped",
        retry.status == 200
            && shipment.status == 200
            && shipment.body.path("shipmentsForOrder").asInt() == 1,
        "retry " + retry.status + ", shipment " + shipment.status);
    verifyShipments("In the end: no order lost, none shipped twice");
  }

  private void metricsAndHealth() {
    header("Metrics and health");
    Reply metrics = get("/metrics");
    String text = metrics.text;
    double published = metric(text, "outbox_events_published_total");
    double orderingErrors = metric(text, "shipping_ordering_errors_total");
    double duplicates = metric(text, "shipping_events_total{outcome=\"duplicate\"");
    info(
        "GET /metrics -> outbox_events_published_total %.0f, shipping_events_total{duplicate} %.0f,"
            + " shipping_ordering_errors_total %.0f",
        published, duplicates, orderingErrors);
    Reply health = get("/health");
    info("GET /health -> %d %s", health.status, health.body.path("status").asText());
    long events = count("outbox_events");
    check(
        "Metrics: every event published (one twice), no ordering error",
        metrics.status == 200
            && published == events + 1
            && orderingErrors == 0
            && duplicates == app.shipping().duplicateCount()
            && duplicates >= 1,
        String.format(
            Locale.ROOT,
            "%.0f published for %d events, %.0f ordering errors",
            published,
            events,
            orderingErrors));
    check("Health: database, broker and relay UP", health.status == 200, health.status + "");
  }

  // ---- summary ---------------------------------------------------------------------------------

  void printSummary(Duration took) {
    long orders = placed.size();
    long paidOrders = placed.values().stream().filter(p -> p.paid).count();
    long shipments = queryLong("SELECT count(*) FROM " + schema + ".shipments");
    long lost =
        queryLong(
            "SELECT count(*) FROM "
                + schema
                + ".orders o LEFT JOIN "
                + schema
                + ".shipping_progress p ON p.order_id = o.id"
                + " WHERE p.last_version IS DISTINCT FROM o.version");
    long twice =
        queryLong(
            "SELECT count(*) FROM (SELECT order_id FROM "
                + schema
                + ".shipments GROUP BY order_id HAVING count(*) > 1) t");
    out.println();
    out.println("Summary");
    String line = "+" + "-".repeat(70) + "+----------+";
    out.println(line);
    out.printf("| %-68s | %-8s |%n", "Check", "Result");
    out.println(line);
    for (Check c : checks) {
      out.printf("| %-68s | %-8s |%n", abbreviate(c.name, 68), c.ok ? "ok" : "FAILED");
    }
    out.println(line);
    out.printf(
        "| %-68s | %8s |%n",
        "Orders placed / paid / shipments", orders + "/" + paidOrders + "/" + shipments);
    out.printf("| %-68s | %8d |%n", "Events written to the outbox", count("outbox_events"));
    out.printf("| %-68s | %8d |%n", "Orders lost (an event never applied by shipping)", lost);
    out.printf("| %-68s | %8d |%n", "Orders shipped twice", twice);
    out.printf(
        "| %-68s | %8d |%n", "Redeliveries ignored by the inbox", app.shipping().duplicateCount());
    out.printf(
        "| %-68s | %8d |%n",
        "Ordering errors seen by shipping", app.shipping().orderingErrorCount());
    out.printf(
        "| %-68s | %8d |%n", "Dead letters retried from the admin endpoint", deadLettersRetried);
    out.println(line);
    long failed = checks.stream().filter(c -> !c.ok).count();
    out.printf(
        Locale.ROOT,
        "%s: %d of %d checks held, in %.1f s%n",
        failed == 0 ? "PASSED" : "FAILED",
        checks.size() - failed,
        checks.size(),
        took.toMillis() / 1000.0);
    if (failed > 0) {
      for (Check c : checks) {
        if (!c.ok) {
          out.println("  failed: " + c.name + " (" + c.detail + ")");
        }
      }
    }
    out.flush();
  }

  // ---- checks and waits ------------------------------------------------------------------------

  private void verifyShipments(String name) {
    List<String> problems = new ArrayList<>();
    for (Map.Entry<UUID, Placed> e : placed.entrySet()) {
      UUID id = e.getKey();
      Placed p = e.getValue();
      List<String> statuses = new ArrayList<>();
      try (Connection c = app.dataSource().getConnection();
          PreparedStatement s =
              c.prepareStatement(
                  "SELECT status FROM " + schema + ".shipments WHERE order_id = ? ORDER BY id")) {
        s.setObject(1, id);
        try (ResultSet rs = s.executeQuery()) {
          while (rs.next()) {
            statuses.add(rs.getString(1));
          }
        }
      } catch (SQLException ex) {
        throw new IllegalStateException(ex);
      }
      List<String> expected = !p.paid ? List.of() : List.of(p.cancelled ? "CANCELLED" : "READY");
      if (!statuses.equals(expected)) {
        problems.add(id + ": shipments " + statuses + ", expected " + expected);
      }
    }
    long paid = placed.values().stream().filter(p -> p.paid).count();
    boolean caughtUp = consumerCaughtUp();
    info(
        "%d orders checked: %d paid orders with exactly one shipment, every event applied in"
            + " order: %s",
        placed.size(), paid, caughtUp && problems.isEmpty() ? "yes" : "NO");
    check(
        name,
        problems.isEmpty() && caughtUp && app.shipping().orderingErrorCount() == 0,
        problems.isEmpty() ? "caught up " + caughtUp : String.join("; ", problems));
  }

  private void await(
      String what, BooleanSupplier done, java.util.function.Supplier<String> progress) {
    long deadline = System.nanoTime() + WAIT.toNanos();
    long nextReport = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
    while (!done.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(
            "Gave up after "
                + WAIT.toSeconds()
                + " s waiting for "
                + what
                + " ("
                + progress.get()
                + ")");
      }
      if (System.nanoTime() > nextReport) {
        info("... %s", progress.get());
        nextReport = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
      }
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while waiting for " + what, e);
      }
    }
  }

  private void header(String title) {
    step++;
    out.printf("[%d] %s%n", step, title);
    out.flush();
  }

  private void info(String format, Object... args) {
    out.println("    " + String.format(Locale.ROOT, format, args));
    out.flush();
  }

  private void check(String name, boolean ok, String detail) {
    checks.add(new Check(name, ok, detail));
    out.println("    " + (ok ? "[ok] " : "[FAILED] ") + name + (ok ? "" : " (" + detail + ")"));
    out.println();
    out.flush();
  }

  // ---- HTTP ------------------------------------------------------------------------------------

  private record Reply(int status, String contentType, JsonNode body, String text) {}

  private ObjectNode order(String customer, int lines) {
    ObjectNode order = json.createObjectNode();
    order.put("customerId", customer);
    ArrayNode items = order.putArray("items");
    for (int i = 1; i <= lines; i++) {
      ObjectNode item = items.addObject();
      item.put("sku", String.format(Locale.ROOT, "SKU-%05d", i));
      item.put("quantity", 1 + i % 4);
      item.put("unitPrice", new BigDecimal("9.99").add(BigDecimal.valueOf(i)));
    }
    return order;
  }

  private Reply post(String path, @org.jspecify.annotations.Nullable JsonNode body) {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(base.resolve(path)).timeout(Duration.ofSeconds(30));
    try {
      request.header("Content-Type", "application/json");
      request.POST(
          body == null
              ? HttpRequest.BodyPublishers.noBody()
              : HttpRequest.BodyPublishers.ofByteArray(json.writeValueAsBytes(body)));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return send(request.build());
  }

  private Reply get(String path) {
    return send(HttpRequest.newBuilder(base.resolve(path)).timeout(Duration.ofSeconds(30)).build());
  }

  private Reply send(HttpRequest request) {
    try {
      HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
      String type = response.headers().firstValue("Content-Type").orElse("");
      JsonNode body =
          type.contains("json") ? json.readTree(response.body()) : json.createObjectNode();
      return new Reply(response.statusCode(), type, body, response.body());
    } catch (IOException e) {
      throw new UncheckedIOException(request.method() + " " + request.uri() + " failed", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  // ---- database and broker look-ups ------------------------------------------------------------

  private long pending() {
    return app.admin().pendingCount();
  }

  private long deadLetterCount() {
    return app.admin().deadLetterCount();
  }

  private boolean consumerCaughtUp() {
    return queryLong(
            "SELECT count(*) FROM "
                + schema
                + ".orders o LEFT JOIN "
                + schema
                + ".shipping_progress p ON p.order_id = o.id"
                + " WHERE p.last_version IS DISTINCT FROM o.version")
        == 0;
  }

  private long count(String table) {
    return queryLong("SELECT count(*) FROM " + schema + "." + table);
  }

  private long shipmentsOf(UUID orderId) {
    return queryLong(
        "SELECT count(*) FROM " + schema + ".shipments WHERE order_id = '" + orderId + "'");
  }

  private int maxAttempts() {
    return (int)
        queryLong(
            "SELECT coalesce(max(attempts), 0) FROM "
                + schema
                + ".outbox_events WHERE processed_at IS NULL");
  }

  private UUID paidEventOf(UUID orderId) {
    try (Connection c = app.dataSource().getConnection();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT id FROM "
                    + schema
                    + ".outbox_events WHERE aggregate_id = ? AND event_type = 'order.paid'")) {
      s.setString(1, orderId.toString());
      try (ResultSet rs = s.executeQuery()) {
        rs.next();
        return rs.getObject(1, UUID.class);
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private long payloadBytes(UUID orderId) {
    return queryLong(
        "SELECT octet_length(payload::text) FROM "
            + schema
            + ".outbox_events WHERE aggregate_id = '"
            + orderId
            + "' AND event_type = 'order.created'");
  }

  private record Backoff(int attempts, long retryInMillis, String lastError) {}

  private Backoff oldestBackoff() {
    try (Connection c = app.dataSource().getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT attempts, greatest(0, (extract(epoch from retry_after - clock_timestamp())"
                    + " * 1000)::bigint), coalesce(last_error, '') FROM "
                    + schema
                    + ".outbox_events WHERE processed_at IS NULL ORDER BY attempts DESC, position"
                    + " LIMIT 1")) {
      if (!rs.next()) {
        return new Backoff(0, 0, "");
      }
      return new Backoff(rs.getInt(1), rs.getLong(2), rs.getString(3));
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private double failedAttempts() {
    return app.registry().find("outbox.events.failed").counters().stream()
        .mapToDouble(Counter::count)
        .sum();
  }

  private long queryLong(String sql) {
    try (Connection c = app.dataSource().getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    } catch (SQLException e) {
      throw new IllegalStateException(sql + ": " + e.getMessage(), e);
    }
  }

  private void sql(String sql) {
    try (Connection c = app.dataSource().getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException(sql + ": " + e.getMessage(), e);
    }
  }

  private void setTopicLimit(KafkaLink kafka, int bytes) {
    ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, kafka.topic());
    try {
      kafka
          .admin()
          .incrementalAlterConfigs(
              Map.of(
                  topic,
                  List.of(
                      new AlterConfigOp(
                          new ConfigEntry("max.message.bytes", Integer.toString(bytes)),
                          AlterConfigOp.OpType.SET))))
          .all()
          .get(30, TimeUnit.SECONDS);
      await(
          "the topic's new limit",
          () -> {
            try {
              String value =
                  kafka
                      .admin()
                      .describeConfigs(List.of(topic))
                      .all()
                      .get(10, TimeUnit.SECONDS)
                      .get(topic)
                      .get("max.message.bytes")
                      .value();
              return Integer.toString(bytes).equals(value);
            } catch (ExecutionException | TimeoutException e) {
              return false;
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
              return false;
            }
          },
          () -> "altering max.message.bytes");
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException("Could not set max.message.bytes of the topic: " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  // ---- text ------------------------------------------------------------------------------------

  /** The value of the first sample of {@code name} (a metric name or a name with labels). */
  private static double metric(String text, String name) {
    for (String line : text.split("\n")) {
      if (line.startsWith(name)) {
        String[] parts = line.split(" ");
        return Double.parseDouble(parts[parts.length - 1]);
      }
    }
    return Double.NaN;
  }

  private static boolean isIncreasing(List<Long> values) {
    for (int i = 1; i < values.size(); i++) {
      if (values.get(i) <= values.get(i - 1)) {
        return false;
      }
    }
    return !values.isEmpty();
  }

  private static String abbreviate(String text, int max) {
    String flat = text.replace('\n', ' ');
    return flat.length() <= max ? flat : flat.substring(0, max - 3) + "...";
  }
}

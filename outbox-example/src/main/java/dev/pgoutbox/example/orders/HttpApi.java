package dev.pgoutbox.example.orders;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.pgoutbox.admin.DeadLetter;
import dev.pgoutbox.relay.OutboxStats;
import io.micrometer.core.instrument.Timer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The order service's HTTP API on the JDK's {@code HttpServer}, one virtual thread per request.
 *
 * <table>
 *   <caption>Endpoints</caption>
 *   <tr><td>{@code POST /orders}</td><td>201 with the order; 400 problem+json naming each bad field</td></tr>
 *   <tr><td>{@code GET /orders/{id}}</td><td>200 with the order; 404</td></tr>
 *   <tr><td>{@code POST /orders/{id}/payment}</td><td>200; 404; 409 with the reason</td></tr>
 *   <tr><td>{@code POST /orders/{id}/cancellation}</td><td>200; 404; 409 with the reason</td></tr>
 *   <tr><td>{@code GET /shipments/{orderId}}</td><td>200 with the shipment; 404 until shipping made one</td></tr>
 *   <tr><td>{@code GET /metrics}</td><td>Prometheus text format</td></tr>
 *   <tr><td>{@code GET /health}</td><td>200 or 503, with database, broker and relay</td></tr>
 *   <tr><td>{@code GET /admin/outbox}</td><td>pending, oldest pending age, dead letters</td></tr>
 *   <tr><td>{@code POST /admin/outbox/dead-letters/{id}/retry}</td><td>200; 404</td></tr>
 * </table>
 *
 * Errors are RFC 9457 {@code application/problem+json} bodies.
 */
final class HttpApi implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(HttpApi.class);

  /** Largest request body accepted. */
  static final int MAX_BODY_BYTES = 1 << 20;

  private static final String JSON = "application/json";
  private static final String PROBLEM = "application/problem+json";
  private static final String PROMETHEUS = "text/plain; version=0.0.4; charset=utf-8";
  private static final String UUID_RE = "([^/]{1,100})";

  private final HttpServer server;
  private final ExecutorService executor;
  private final OrderApplication app;
  private final ObjectMapper json;
  private final List<Route> routes = new ArrayList<>();

  private HttpApi(HttpServer server, ExecutorService executor, OrderApplication app) {
    this.server = server;
    this.executor = executor;
    this.app = app;
    this.json =
        JsonMapper.builder()
            .addModule(new JavaTimeModule())
            .disable(SerializationFeature.WRITE_DATES_AS_TIMESTAMPS)
            .disable(SerializationFeature.WRITE_DURATIONS_AS_TIMESTAMPS)
            .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .build();
    route("POST", "/orders", "/orders", (x, m) -> placeOrder(x));
    route("GET", "/orders/" + UUID_RE, "/orders/{id}", (x, m) -> getOrder(x, uuid(m, "id")));
    route(
        "POST",
        "/orders/" + UUID_RE + "/payment",
        "/orders/{id}/payment",
        (x, m) -> change(x, uuid(m, "id"), true));
    route(
        "POST",
        "/orders/" + UUID_RE + "/cancellation",
        "/orders/{id}/cancellation",
        (x, m) -> change(x, uuid(m, "id"), false));
    route(
        "GET",
        "/shipments/" + UUID_RE,
        "/shipments/{orderId}",
        (x, m) -> getShipment(x, uuid(m, "orderId")));
    route("GET", "/metrics", "/metrics", (x, m) -> metrics());
    route("GET", "/health", "/health", (x, m) -> health());
    route("GET", "/admin/outbox", "/admin/outbox", (x, m) -> adminOutbox());
    route(
        "POST",
        "/admin/outbox/dead-letters/" + UUID_RE + "/retry",
        "/admin/outbox/dead-letters/{id}/retry",
        (x, m) -> retryDeadLetter(x, uuid(m, "id")));
  }

  /** Starts the server on {@code host:port} (0 for a free port). */
  static HttpApi start(String host, int port, OrderApplication app) {
    HttpServer server;
    try {
      server = HttpServer.create(new InetSocketAddress(host, port), 0);
    } catch (IOException e) {
      throw new IllegalStateException(
          "Could not listen on " + host + ":" + port + ": " + e.getMessage(), e);
    }
    ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
    server.setExecutor(executor);
    HttpApi api = new HttpApi(server, executor, app);
    server.createContext("/", api::handle);
    server.start();
    return api;
  }

  /** E.g. {@code http://127.0.0.1:8080}. */
  URI baseUri() {
    InetSocketAddress address = server.getAddress();
    return URI.create("http://" + address.getHostString() + ":" + address.getPort());
  }

  /** Stops taking requests, lets those in progress finish (up to 2 s). */
  @Override
  public void close() {
    server.stop(2);
    executor.close();
  }

  // ---- routing ---------------------------------------------------------------------------------

  /** What a handler answers. */
  private record Response(int status, String contentType, byte[] body) {}

  @FunctionalInterface
  private interface Handler {
    Response handle(HttpExchange exchange, Matcher match) throws IOException;
  }

  private record Route(String method, Pattern pattern, String template, Handler handler) {}

  private void route(String method, String regex, String template, Handler handler) {
    routes.add(new Route(method, Pattern.compile(regex), template, handler));
  }

  private void handle(HttpExchange exchange) throws IOException {
    long started = System.nanoTime();
    String method = exchange.getRequestMethod();
    String path = exchange.getRequestURI().getPath();
    String template = "unmatched";
    Response response;
    try {
      Route found = null;
      Matcher match = null;
      List<String> allowed = new ArrayList<>();
      for (Route route : routes) {
        Matcher m = route.pattern().matcher(path);
        if (m.matches()) {
          allowed.add(route.method());
          if (route.method().equals(method)) {
            found = route;
            match = m;
          }
        }
      }
      if (found == null) {
        if (allowed.isEmpty()) {
          response = problem(404, "Not Found", "no endpoint at " + path, path, null);
        } else {
          exchange.getResponseHeaders().set("Allow", String.join(", ", allowed));
          response =
              problem(
                  405,
                  "Method Not Allowed",
                  method + " is not allowed on " + path + "; allowed: " + allowed,
                  path,
                  null);
        }
      } else {
        template = found.template();
        response = found.handler().handle(exchange, match);
      }
    } catch (InvalidRequestException e) {
      response = invalid(e, path);
    } catch (RuntimeException e) {
      LOG.error("{} {} failed: {}", method, path, e.toString(), e);
      response =
          problem(
              500,
              "Internal Server Error",
              "the request failed: " + e.getClass().getSimpleName(),
              path,
              null);
    }
    exchange.getResponseHeaders().set("Content-Type", response.contentType());
    byte[] body = response.body();
    exchange.sendResponseHeaders(response.status(), body.length == 0 ? -1 : body.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(body);
    }
    Timer.builder("http.server.requests")
        .description("HTTP requests handled")
        .tag("method", method)
        .tag("uri", template)
        .tag("status", Integer.toString(response.status()))
        .register(app.registry())
        .record(Duration.ofNanos(System.nanoTime() - started));
  }

  // ---- handlers --------------------------------------------------------------------------------

  private Response placeOrder(HttpExchange exchange) throws IOException {
    JsonNode body = readBody(exchange);
    Order order = app.orders().place(NewOrder.from(body));
    exchange.getResponseHeaders().set("Location", "/orders/" + order.id());
    return json(201, order);
  }

  private Response getOrder(HttpExchange exchange, UUID id) throws IOException {
    Optional<Order> order = app.orders().find(id);
    return order.isPresent()
        ? json(200, order.get())
        : problem(404, "Not Found", "no order " + id, path(exchange), null);
  }

  private Response change(HttpExchange exchange, UUID id, boolean payment) throws IOException {
    OrderService.Change change = payment ? app.orders().pay(id) : app.orders().cancel(id);
    return switch (change) {
      case OrderService.Change.Done done -> json(200, done.order());
      case OrderService.Change.NotFound nf ->
          problem(404, "Not Found", "no order " + id, path(exchange), null);
      case OrderService.Change.Refused refused -> {
        Map<String, Object> extra = new LinkedHashMap<>();
        extra.put("orderStatus", refused.order().status());
        yield problem(
            409,
            payment ? "Payment Refused" : "Cancellation Refused",
            refused.reason(),
            path(exchange),
            extra);
      }
    };
  }

  private Response getShipment(HttpExchange exchange, UUID orderId) throws IOException {
    List<ShippingService.Shipment> shipments = app.shipping().shipments(orderId);
    if (shipments.isEmpty()) {
      return problem(
          404,
          "Not Found",
          "no shipment for order " + orderId + " (yet: shipping creates it when the order is paid)",
          path(exchange),
          null);
    }
    ShippingService.Shipment first = shipments.get(0);
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("id", first.id());
    body.put("orderId", first.orderId());
    body.put("status", first.status());
    body.put("createdByEvent", first.createdByEvent());
    body.put("createdAt", first.createdAt());
    body.put("updatedAt", first.updatedAt());
    // More than one would mean an event applied twice; show it rather than hide it.
    body.put("shipmentsForOrder", shipments.size());
    return json(200, body);
  }

  private Response metrics() {
    return new Response(200, PROMETHEUS, app.registry().scrape().getBytes(StandardCharsets.UTF_8));
  }

  private Response health() throws IOException {
    BrokerLink.Health database = app.databaseHealth();
    BrokerLink.Health broker = app.broker().health();
    boolean relayUp = app.relay().isRunning();
    BrokerLink.Health relay =
        new BrokerLink.Health(
            relayUp, relayUp ? "relay " + app.relay().name() + " running" : "relay stopped");
    boolean up = database.up() && broker.up() && relay.up();
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("status", up ? "UP" : "DOWN");
    Map<String, Object> components = new LinkedHashMap<>();
    components.put("database", component(database));
    components.put("broker", component(broker));
    components.put("relay", component(relay));
    body.put("components", components);
    return json(up ? 200 : 503, body);
  }

  private Response adminOutbox() throws IOException {
    OutboxStats stats = app.admin().stats();
    List<DeadLetter> dead = app.admin().deadLetters(100, 0);
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("pending", stats.pending());
    body.put("oldestPendingAgeSeconds", stats.oldestPendingAge().toMillis() / 1000.0);
    body.put("deadLetterCount", stats.deadLetters());
    body.put("blockedAggregates", stats.blockedAggregates());
    List<Map<String, Object>> letters = new ArrayList<>();
    for (DeadLetter d : dead) {
      Map<String, Object> letter = new LinkedHashMap<>();
      letter.put("id", d.id());
      letter.put("aggregateType", d.aggregateType());
      letter.put("aggregateId", d.aggregateId());
      letter.put("eventType", d.eventType());
      letter.put("attempts", d.attempts());
      letter.put("lastError", d.lastError());
      letter.put("payloadBytes", d.payload().getBytes(StandardCharsets.UTF_8).length);
      letter.put("createdAt", d.createdAt());
      letter.put("deadAt", d.deadAt());
      letter.put("retry", "/admin/outbox/dead-letters/" + d.id() + "/retry");
      letters.add(letter);
    }
    body.put("deadLetters", letters);
    return json(200, body);
  }

  private Response retryDeadLetter(HttpExchange exchange, UUID id) throws IOException {
    if (!app.admin().retry(id)) {
      return problem(404, "Not Found", "no dead or backing-off event " + id, path(exchange), null);
    }
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("id", id);
    body.put("retried", true);
    return json(200, body);
  }

  // ---- helpers ---------------------------------------------------------------------------------

  private static Map<String, Object> component(BrokerLink.Health health) {
    Map<String, Object> c = new LinkedHashMap<>();
    c.put("status", health.up() ? "UP" : "DOWN");
    c.put("detail", health.detail());
    return c;
  }

  private static String path(HttpExchange exchange) {
    return exchange.getRequestURI().getPath();
  }

  private static UUID uuid(Matcher match, String name) {
    String text = match.group(1);
    try {
      UUID id = UUID.fromString(text);
      if (id.toString().equalsIgnoreCase(text)) {
        return id;
      }
    } catch (IllegalArgumentException e) {
      // Reported below.
    }
    throw new InvalidRequestException(
        List.of(new FieldError(name, "must be a UUID, was '" + text + "'")));
  }

  private JsonNode readBody(HttpExchange exchange) throws IOException {
    byte[] bytes;
    try (InputStream in = exchange.getRequestBody()) {
      bytes = in.readNBytes(MAX_BODY_BYTES + 1);
    }
    if (bytes.length > MAX_BODY_BYTES) {
      throw new InvalidRequestException(
          List.of(new FieldError("$", "body must be at most " + MAX_BODY_BYTES + " bytes")));
    }
    if (bytes.length == 0) {
      throw new InvalidRequestException(
          List.of(new FieldError("$", "body is required: a JSON object")));
    }
    try {
      return json.readTree(bytes);
    } catch (JsonProcessingException e) {
      throw new InvalidRequestException(
          List.of(new FieldError("$", "body is not valid JSON: " + e.getOriginalMessage())));
    }
  }

  private Response json(int status, Object body) throws IOException {
    return new Response(status, JSON, json.writeValueAsBytes(body));
  }

  private Response invalid(InvalidRequestException e, String path) {
    Map<String, Object> extra = new LinkedHashMap<>();
    extra.put("errors", e.errors());
    int n = e.errors().size();
    return problem(
        400,
        "Invalid Request",
        n == 1 ? "1 field is invalid" : n + " fields are invalid",
        path,
        extra);
  }

  /** An RFC 9457 problem document. */
  private Response problem(
      int status,
      String title,
      String detail,
      String instance,
      @Nullable Map<String, Object> extensions) {
    Map<String, Object> body = new LinkedHashMap<>();
    // Specific types for the two problems clients act on; about:blank (title = the status's
    // reason phrase) for the rest, as RFC 9457 section 4.2.1 suggests.
    body.put(
        "type",
        switch (status) {
          case 400 -> "urn:pgoutbox:example:problem:invalid-request";
          case 409 -> "urn:pgoutbox:example:problem:state-conflict";
          default -> "about:blank";
        });
    body.put("title", title);
    body.put("status", status);
    body.put("detail", detail);
    body.put("instance", instance);
    if (extensions != null) {
      body.putAll(extensions);
    }
    try {
      return new Response(status, PROBLEM, json.writeValueAsBytes(body));
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("Could not write a problem document", e);
    }
  }
}

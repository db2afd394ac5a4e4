package dev.pgoutbox.relay;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.pgoutbox.admin.DeadLetter;
import dev.pgoutbox.admin.OutboxAdmin;
import dev.pgoutbox.core.consumer.WebhookEventIds;
import dev.pgoutbox.core.consumer.WebhookHeaders;
import dev.pgoutbox.relay.webhook.WebhookPublisher;
import dev.pgoutbox.relay.webhook.WebhookRouting;
import dev.pgoutbox.testing.TestSchema;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.stream.Collectors;
import org.jooq.Record2;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Rows written by hand (a DBA's {@code INSERT}, a migration, another service) that no publisher can
 * use are dead-lettered with a reason a person can read, while the good events of other aggregates
 * are published in the same run, through the real webhook publisher to a real HTTP server.
 */
class UnusableRowsIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static final Set<String> KNOWN_TYPES = Set.of("order.created", "order.paid");

  private HttpServer server;
  private WebhookPublisher publisher;
  private ExecutorService executor;
  private final List<UUID> received = new CopyOnWriteArrayList<>();
  private final List<Map<String, List<String>>> receivedHeaders = new CopyOnWriteArrayList<>();
  private final Map<UUID, Map<String, List<String>>> receivedById =
      new java.util.concurrent.ConcurrentHashMap<>();

  @BeforeEach
  void startServer() throws Exception {
    db.execute("TRUNCATE outbox_events");
    executor = Executors.newVirtualThreadPerTaskExecutor();
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 50);
    server.setExecutor(executor);
    server.createContext(
        "/hook",
        exchange -> {
          exchange.getRequestBody().readAllBytes();
          received.add(WebhookEventIds.eventId(exchange.getRequestHeaders()));
          receivedHeaders.add(Map.copyOf(exchange.getRequestHeaders()));
          receivedById.put(
              WebhookEventIds.eventId(exchange.getRequestHeaders()),
              Map.copyOf(exchange.getRequestHeaders()));
          exchange.sendResponseHeaders(204, -1);
          exchange.close();
        });
    server.start();
    publisher = WebhookPublisher.builder(routing()).build();
  }

  @AfterEach
  void stopServer() {
    publisher.close();
    server.stop(0);
    executor.shutdownNow();
  }

  /** Routes known event types to the hook; refuses the others, which no retry would fix. */
  private WebhookRouting routing() {
    URI hook = URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/hook");
    return message -> {
      if (!KNOWN_TYPES.contains(message.eventType())) {
        throw new IllegalArgumentException(
            "unknown event_type '" + message.eventType() + "', known: order.created, order.paid");
      }
      return hook;
    };
  }

  /** An event as someone would insert it by hand, with {@code headers} as JSON text. */
  private static UUID insertByHand(String aggregateId, String eventType, String headersJson) {
    UUID id = UUID.randomUUID();
    db.execute(
        "INSERT INTO outbox_events (id, aggregate_type, aggregate_id, event_type, payload, headers)"
            + " VALUES ('"
            + id
            + "', 'order', '"
            + aggregateId
            + "', '"
            + eventType
            + "', '{\"by\": \"hand\"}', '"
            + headersJson
            + "')");
    return id;
  }

  private static Record2<String, java.time.OffsetDateTime> deadReason(UUID id) {
    return db.dsl()
        .select(OUTBOX_EVENTS.LAST_ERROR, OUTBOX_EVENTS.DEAD_AT)
        .from(OUTBOX_EVENTS)
        .where(OUTBOX_EVENTS.ID.eq(id))
        .fetchSingle();
  }

  @Test
  void unusableRowsAreDeadLetteredWithTheirReasonAndGoodEventsFlowInTheSameRun() throws Exception {
    UUID good1 = insertByHand("good-1", "order.created", "{}");
    UUID unknownType = insertByHand("bad-type", "order.teleported", "{}");
    UUID array = insertByHand("bad-array", "order.created", "[1, 2]");
    UUID number = insertByHand("bad-number", "order.created", "5");
    UUID string = insertByHand("bad-string", "order.created", "\"traceparent\"");
    // A JSON null (the column is NOT NULL, so this is as close to "no headers" as SQL gets) is
    // read as no headers: the row is usable and is published.
    UUID jsonNull = insertByHand("null-headers", "order.created", "null");
    UUID nested = insertByHand("bad-nested", "order.created", "{\"trace\": {\"id\": 1}}");
    UUID nonString = insertByHand("bad-boolean", "order.created", "{\"sampled\": true}");
    UUID crlf = insertByHand("bad-crlf", "order.created", "{\"x-note\": \"a\\r\\nX-Injected: 1\"}");
    UUID restricted = insertByHand("bad-host", "order.created", "{\"Host\": \"evil.example\"}");
    UUID good2 = insertByHand("good-2", "order.paid", "{\"traceparent\": \"00-abc-01\"}");
    UUID good1Next = insertByHand("good-1", "order.paid", "{}");

    OutboxRelay relay =
        OutboxRelay.builder()
            .name("unusable-rows")
            .dataSource(db.dataSource())
            .schema(db.schema())
            .publisher(publisher)
            .config(RelayConfig.builder().listenForNotifications(false).build())
            .build();

    assertThat(relay.runOnce()).as("every row claimed in one run").isEqualTo(12);

    // A CR/LF in a header value travels encoded (RFC 8187), and a header named like one HTTP or
    // the webhook sets itself gives way to it: both rows are delivered, nothing smuggled.
    assertThat(received)
        .containsExactlyInAnyOrder(good1, good1Next, good2, jsonNull, crlf, restricted);
    assertThat(received.indexOf(good1)).isLessThan(received.indexOf(good1Next));
    assertThat(
            db.queryLong(
                "select count(*) from outbox_events where processed_at is not null and id in ('"
                    + good1
                    + "', '"
                    + good1Next
                    + "', '"
                    + good2
                    + "', '"
                    + jsonNull
                    + "', '"
                    + crlf
                    + "', '"
                    + restricted
                    + "')"))
        .isEqualTo(6);

    Map<UUID, String> expected =
        Map.of(
            unknownType,
            "cannot build the webhook request: java.lang.IllegalArgumentException: unknown"
                + " event_type 'order.teleported', known: order.created, order.paid",
            array,
            "unusable row: headers must be a JSON object of strings, was a JSON ARRAY",
            number,
            "unusable row: headers must be a JSON object of strings, was a JSON NUMBER",
            string,
            "unusable row: headers must be a JSON object of strings, was a JSON STRING",
            nested,
            "unusable row: headers must be a JSON object of strings, but header 'trace' is a"
                + " JSON OBJECT",
            nonString,
            "unusable row: headers must be a JSON object of strings, but header 'sampled' is"
                + " a JSON BOOLEAN");
    for (Map.Entry<UUID, String> row : expected.entrySet()) {
      assertThat(deadReason(row.getKey()).value1()).isEqualTo(row.getValue());
      assertThat(deadReason(row.getKey()).value2()).as(row.getValue()).isNotNull();
    }
    assertThat(WebhookHeaders.get(receivedById.get(crlf), "x-note"))
        .as("the CR/LF value arrives intact, encoded")
        .isEqualTo("a\r\nX-Injected: 1");
    assertThat(receivedById.get(restricted).get("Host"))
        .as("the stored Host header is not the request's")
        .doesNotContain("evil.example");
    assertThat(receivedHeaders)
        .as("no header was smuggled into a request")
        .allSatisfy(h -> assertThat(h.keySet()).doesNotContain("X-injected", "X-Injected"));

    List<DeadLetter> dead =
        OutboxAdmin.builder()
            .dataSource(db.dataSource())
            .schema(db.schema())
            .build()
            .deadLetters(100, 0);
    assertThat(dead).hasSize(6);
    assertThat(dead.stream().map(DeadLetter::lastError).collect(Collectors.toList()))
        .allSatisfy(reason -> assertThat(reason).isNotBlank());

    UUID later = insertByHand("good-3", "order.created", "{}");
    assertThat(relay.runOnce()).as("the relay keeps going: only the new event").isEqualTo(1);
    assertThat(received).contains(later);
  }
}

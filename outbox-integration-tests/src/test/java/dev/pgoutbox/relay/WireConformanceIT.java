package dev.pgoutbox.relay;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.TextNode;
import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.Delivery;
import com.rabbitmq.client.GetResponse;
import com.rabbitmq.client.LongString;
import com.sun.net.httpserver.HttpServer;
import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.core.RawJson;
import dev.pgoutbox.core.consumer.CloudEvent;
import dev.pgoutbox.core.consumer.KafkaCloudEvents;
import dev.pgoutbox.core.consumer.NatsCloudEvents;
import dev.pgoutbox.core.consumer.NatsEventIds;
import dev.pgoutbox.core.consumer.NatsHeaders;
import dev.pgoutbox.core.consumer.RabbitMqCloudEvents;
import dev.pgoutbox.core.consumer.StandardWebhooks;
import dev.pgoutbox.core.consumer.WebhookCloudEvents;
import dev.pgoutbox.core.consumer.WebhookEventIds;
import dev.pgoutbox.core.consumer.WebhookHeaders;
import dev.pgoutbox.relay.brokers.RelayDrive;
import dev.pgoutbox.relay.kafka.KafkaPublisher;
import dev.pgoutbox.relay.kafka.KafkaRouting;
import dev.pgoutbox.relay.nats.NatsPublisher;
import dev.pgoutbox.relay.nats.NatsRouting;
import dev.pgoutbox.relay.rabbitmq.RabbitMqPublisher;
import dev.pgoutbox.relay.rabbitmq.RabbitMqRoute;
import dev.pgoutbox.relay.testing.KafkaReadBack;
import dev.pgoutbox.relay.testing.NatsReadBack;
import dev.pgoutbox.relay.testing.RabbitReadBack;
import dev.pgoutbox.relay.webhook.WebhookPublisher;
import dev.pgoutbox.testing.EmbeddedKafka;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import io.cloudevents.core.format.EventFormat;
import io.cloudevents.core.provider.EventFormatProvider;
import io.cloudevents.http.HttpMessageFactory;
import io.cloudevents.jackson.JsonFormat;
import io.cloudevents.kafka.KafkaMessageFactory;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.impl.Headers;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.header.Header;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Every event the writer accepts arrives intact on every broker, and every envelope reads right in
 * the official clients. A table of awkward events (non-ASCII in every field, {@code %}, quotes,
 * spaces at the edges, CR, LF, tab and other control characters, names at their length limit, long
 * header values, empty and non-object payloads) is appended with the real writer, drained by a real
 * relay through each real broker, and read back with the brokers' own clients and the CloudEvents
 * SDK for Java (Kafka binary mode, the JSON event format for NATS structured mode) or, where the
 * SDK has no reader (AMQP 0-9-1, the NATS binding's binary draft), the binding's text with the
 * JDK's own percent-decoder; the webhook through a real HTTP server (the JDK's), read with the
 * SDK's HTTP reader and checked with the Standard Webhooks library's own verifier. Every field is
 * compared byte for byte with what the relay claimed; no event may fail even once.
 */
@SuppressWarnings("try") // io.nats.client.Connection.close() may throw InterruptedException.
class WireConformanceIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  static final String SOURCE = "/conformance";
  static final ObjectMapper JSON = new ObjectMapper();
  static final Options NATS = new Options.Builder().server("nats://127.0.0.1:4222").build();

  static final String SECRET =
      "whsec_"
          + Base64.getEncoder()
              .encodeToString("the conformance key of 32 bytes!".getBytes(StandardCharsets.UTF_8));

  static EmbeddedKafka kafka;

  @BeforeAll
  static void startKafka() {
    kafka = EmbeddedKafka.start();
  }

  @AfterAll
  static void stopKafka() {
    kafka.close();
  }

  /** The awkward events: every one is accepted by the writer. */
  static List<OutboxEvent> table() {
    String longest = "😀".repeat(OutboxEvent.MAX_NAME_LENGTH);
    String control = "ctl\u0001\u0007\u001b\u007f\u0085\u009f";
    List<OutboxEvent> events = new ArrayList<>();
    events.add(OutboxEvent.of("order", "Zürich", "order.created", Map.of("n", 1)));
    events.add(
        OutboxEvent.builder()
            .aggregate("Bestellung Ü", "東京-1")
            .eventType("bestellung.geändert")
            .payload(Map.of("s", "Zürich 東京 😀 \"q\" %41 \\ \n\t"))
            .header("x-city", "Zürich")
            .header("x-jp", "東京")
            .build());
    events.add(
        OutboxEvent.builder()
            .aggregate("order", "a b%41\"q")
            .eventType("type with spaces %41 \"q\"")
            .payload(RawJson.of("{ \"spaced\" :  [1, 2.50, {\"x\": null}] }"))
            .header("x-pct", "a b%41\"q")
            .header("x-ext", "UTF-8''Z%C3%BCrich")
            .header("x-quoted", "\"quoted\"")
            .build());
    events.add(
        OutboxEvent.builder()
            .aggregate("order", " edge spaces ")
            .eventType("line\r\nbreak\ttab")
            .payload(NullNode.getInstance())
            .header("x-crlf", "one\r\ntwo")
            .header("x-edge", " a ")
            .header("x-empty", "")
            .header("x-tab", "\t")
            .build());
    events.add(
        OutboxEvent.builder()
            .aggregate(control, control)
            .eventType(control)
            .payload(TextNode.valueOf(""))
            .header("x-control", control)
            .build());
    events.add(
        OutboxEvent.builder()
            .aggregate(longest, longest)
            .eventType(longest) // 400 bytes: more than the AMQP type property holds
            .payload(Map.of())
            .header("k".repeat(100), "v")
            .header("x-long", "x".repeat(16_000) + "ü")
            .header("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
            .build());
    events.add(OutboxEvent.of("a.b", "1.2", "*", Map.of("big", "ü".repeat(50_000))));
    events.add(OutboxEvent.of("é", "é", "é".repeat(OutboxEvent.MAX_NAME_LENGTH), Map.of()));
    return events;
  }

  @Test
  void kafkaCarriesEveryFieldAndTheSdkReadsTheCloudEvent() throws Exception {
    KafkaRouting routing = KafkaRouting.byAggregateType("wire.");
    Set<String> topics = new HashSet<>();
    for (OutboxEvent e : table()) {
      topics.add(routing.topic(probe(e)));
    }
    topics.forEach(t -> kafka.createTopic(t, 2));
    List<OutboxMessage> sent =
        appendAndDrain(
            KafkaPublisher.builder(kafka.bootstrapServers())
                .routing(routing)
                .cloudEvents(CloudEvents.binary(SOURCE))
                .build());
    Map<UUID, ConsumerRecord<String, byte[]>> got = new ConcurrentHashMap<>();
    try (KafkaConsumer<String, byte[]> consumer =
        KafkaReadBack.consumer(kafka.bootstrapServers(), "wire")) {
      consumer.subscribe(Pattern.compile("wire\\..*"));
      Eventually.await(
          "every record",
          Duration.ofMinutes(1),
          () -> {
            for (ConsumerRecord<String, byte[]> r : consumer.poll(Duration.ofMillis(200))) {
              got.put(UUID.fromString(text(r, KafkaPublisher.EVENT_ID_HEADER)), r);
            }
            return got.size() == sent.size();
          });
    }
    for (OutboxMessage m : sent) {
      ConsumerRecord<String, byte[]> r = got.get(m.id());
      String where = m.aggregateId();
      assertThat(r.topic()).as(where).isEqualTo(routing.topic(m));
      assertThat(r.key()).as(where).isEqualTo(m.aggregateId());
      assertThat(r.value()).as(where).isEqualTo(m.payloadBytes());
      Map<String, String> expected = new LinkedHashMap<>(m.headers());
      expected.put(KafkaPublisher.EVENT_ID_HEADER, m.id().toString());
      expected.put(KafkaPublisher.EVENT_TYPE_HEADER, m.eventType());
      expected.put(KafkaPublisher.AGGREGATE_TYPE_HEADER, m.aggregateType());
      ceAttributes(m).forEach((name, value) -> expected.put("ce_" + name, value));
      expected.put("content-type", "application/json");
      Map<String, String> headers = new HashMap<>();
      for (Header h : r.headers()) {
        assertThat(headers.put(h.key(), new String(h.value(), StandardCharsets.UTF_8)))
            .as("%s: one header named %s", where, h.key())
            .isNull();
        // UTF-8 carries anything: the bytes are the value's, unchanged.
        assertThat(h.value()).isEqualTo(expected.get(h.key()).getBytes(StandardCharsets.UTF_8));
      }
      assertThat(headers).as(where).isEqualTo(expected);
      assertSdkEvent(KafkaMessageFactory.createReader(r).toEvent(), m);
      assertOurs(KafkaCloudEvents.read(r), m);
    }
  }

  @Test
  void rabbitMqCarriesEveryFieldAsAmqpStrings() throws Exception {
    ConnectionFactory factory = RabbitReadBack.localFactory();
    try (com.rabbitmq.client.Connection connection = factory.newConnection("wire-conformance");
        Channel channel = connection.createChannel()) {
      String exchange = "pgoutbox.test.wire." + UUID.randomUUID();
      String queue = RabbitReadBack.boundQueue(channel, exchange);
      // byEventType would need every event type to fit a routing key (255 bytes in UTF-8).
      List<OutboxMessage> sent =
          appendAndDrain(
              RabbitMqPublisher.builder(factory, m -> new RabbitMqRoute(exchange, "wire"))
                  .cloudEvents(CloudEvents.binary(SOURCE))
                  .build());
      Map<String, Delivery> got = new HashMap<>();
      Eventually.await(
          "every message",
          Duration.ofSeconds(30),
          () -> {
            try {
              GetResponse r = channel.basicGet(queue, true);
              if (r != null) {
                got.put(
                    r.getProps().getMessageId(),
                    new Delivery(r.getEnvelope(), r.getProps(), r.getBody()));
              }
            } catch (java.io.IOException e) {
              throw new IllegalStateException(e);
            }
            return got.size() == sent.size();
          });
      for (OutboxMessage m : sent) {
        Delivery d = got.get(m.id().toString());
        AMQP.BasicProperties p = d.getProperties();
        String where = m.aggregateId();
        assertThat(d.getBody()).as(where).isEqualTo(m.payloadBytes());
        assertThat(p.getContentType()).isEqualTo("application/json");
        int typeBytes = m.eventType().getBytes(StandardCharsets.UTF_8).length;
        assertThat(p.getType()).as(where).isEqualTo(typeBytes <= 255 ? m.eventType() : null);
        Map<String, String> expected = new LinkedHashMap<>(m.headers());
        expected.put(RabbitMqPublisher.EVENT_TYPE_HEADER, m.eventType());
        expected.put(RabbitMqPublisher.AGGREGATE_TYPE_HEADER, m.aggregateType());
        expected.put(RabbitMqPublisher.AGGREGATE_ID_HEADER, m.aggregateId());
        ceAttributes(m).forEach((name, value) -> expected.put("cloudEvents:" + name, value));
        Map<String, String> headers = new HashMap<>();
        p.getHeaders()
            .forEach(
                (name, value) -> {
                  byte[] bytes = ((LongString) value).getBytes();
                  assertThat(bytes)
                      .as("%s: %s", where, name)
                      .isEqualTo(expected.get(name).getBytes(StandardCharsets.UTF_8));
                  headers.put(name, new String(bytes, StandardCharsets.UTF_8));
                });
        assertThat(headers).as(where).isEqualTo(expected);
        assertOurs(RabbitMqCloudEvents.read(d), m);
      }
    }
  }

  @Test
  void natsCarriesEveryFieldWithoutCloudEvents() throws Exception {
    natsRoundTrip(
        null,
        (m, message) -> {
          assertThat(message.getData()).isEqualTo(m.payloadBytes());
          assertThat(message.getHeaders().getFirst("Content-Type")).isNull();
        });
  }

  @Test
  void natsStructuredModeIsTheJsonEventFormatTheSdkReads() throws Exception {
    EventFormat format = EventFormatProvider.getInstance().resolveFormat(JsonFormat.CONTENT_TYPE);
    natsRoundTrip(
        CloudEvents.structured(SOURCE),
        (m, message) -> {
          assertThat(message.getHeaders().getFirst("Content-Type"))
              .isEqualTo("application/cloudevents+json");
          io.cloudevents.CloudEvent ce = format.deserialize(message.getData());
          assertSdkEvent(ce, m);
          assertOurs(NatsCloudEvents.read(message), m);
          assertThat(message.getHeaders().keySet()).noneMatch(n -> n.startsWith("ce-"));
        });
  }

  @Test
  void natsBinaryModeFollowsTheBindingsDraftToTheLetter() throws Exception {
    natsRoundTrip(
        CloudEvents.binary(SOURCE),
        (m, message) -> {
          Headers h = message.getHeaders();
          assertThat(message.getData()).isEqualTo(m.payloadBytes());
          Map<String, String> expected = new LinkedHashMap<>(ceAttributes(m));
          expected.put("datacontenttype", "application/json");
          Map<String, String> decoded = new HashMap<>();
          for (String name : h.keySet()) {
            if (name.startsWith("ce-")) {
              String raw = h.getFirst(name);
              // §3.1.3.2: space, double quote, percent and all but U+0021..U+007E are encoded.
              assertThat(raw.chars()).as(name).allMatch(c -> c > 0x20 && c < 0x7F && c != '"');
              decoded.put(name.substring(3), specPercentDecode(raw));
            }
          }
          assertThat(decoded).isEqualTo(expected);
          assertThat(h.getFirst("content-type"))
              .isNull(); // The draft's name is ce-datacontenttype.
          assertOurs(NatsCloudEvents.read(message), m);
        });
  }

  @Test
  void webhookBinaryModePercentEncodesCeHeadersAndTheSdkAndStandardWebhooksReadIt()
      throws Exception {
    webhookRoundTrip(
        CloudEvents.binary(SOURCE),
        (m, request) -> {
          assertThat(request.body()).isEqualTo(m.payloadBytes());
          assertThat(first(request, "Content-Type")).isEqualTo("application/json");
          Map<String, String> decoded = new HashMap<>();
          request
              .headers()
              .forEach(
                  (name, values) -> {
                    String lower = name.toLowerCase(Locale.ROOT);
                    if (lower.startsWith("ce-")) {
                      String raw = values.get(0);
                      // HTTP binding §3.1.3.2: space, double quote, percent and all but
                      // U+0021..U+007E are percent-encoded.
                      assertThat(raw.chars())
                          .as(name)
                          .allMatch(c -> c > 0x20 && c < 0x7F && c != '"');
                      decoded.put(lower.substring(3), specPercentDecode(raw));
                    }
                  });
          assertThat(decoded).isEqualTo(ceAttributes(m));
          // The SDK's HTTP reader does not percent-decode (cloudevents/sdk-java#748): it hands
          // back the header text, which the binding's single round of decoding turns into the
          // field.
          io.cloudevents.CloudEvent sdk =
              HttpMessageFactory.createReaderFromMultimap(request.headers(), request.body())
                  .toEvent();
          assertThat(sdk.getId()).isEqualTo(m.id().toString());
          assertThat(sdk.getSource()).isEqualTo(URI.create(SOURCE));
          assertThat(specPercentDecode(sdk.getType())).isEqualTo(m.eventType());
          assertThat(specPercentDecode(sdk.getSubject())).isEqualTo(m.aggregateId());
          assertThat(sdk.getTime())
              .isEqualTo(OffsetDateTime.ofInstant(m.createdAt(), ZoneOffset.UTC));
          assertThat(sdk.getDataContentType()).isEqualTo("application/json");
          assertThat(sdk.getData().toBytes()).isEqualTo(m.payloadBytes());
          assertOurs(WebhookCloudEvents.read(request.headers(), request.body()), m);
        });
  }

  @Test
  void webhookStructuredModeIsTheJsonEventFormatTheSdkReads() throws Exception {
    webhookRoundTrip(
        CloudEvents.structured(SOURCE),
        (m, request) -> {
          assertThat(first(request, "Content-Type"))
              .isEqualTo("application/cloudevents+json; charset=UTF-8");
          assertThat(request.headers().keySet())
              .noneMatch(n -> n.toLowerCase(Locale.ROOT).startsWith("ce-"));
          assertSdkEvent(
              HttpMessageFactory.createReaderFromMultimap(request.headers(), request.body())
                  .toEvent(),
              m);
          assertOurs(WebhookCloudEvents.read(request.headers(), request.body()), m);
        });
  }

  @Test
  void webhookWithoutCloudEventsCarriesEveryFieldUnchanged() throws Exception {
    webhookRoundTrip(
        null,
        (m, request) -> {
          assertThat(request.body()).isEqualTo(m.payloadBytes());
          assertThat(request.headers().keySet())
              .noneMatch(n -> n.toLowerCase(Locale.ROOT).startsWith("ce-"));
        });
  }

  record Request(Map<String, List<String>> headers, byte[] body) {}

  interface WebhookCheck {
    void check(OutboxMessage sent, Request received) throws Exception;
  }

  /**
   * A started HTTP server that answers 204 to each request to {@code /events} and puts it (its
   * headers, as sent, and body) into {@code got} under {@code keyOf} of it.
   */
  private static HttpServer startReceiver(
      Map<String, Request> got, java.util.function.Function<Request, String> keyOf)
      throws java.io.IOException {
    HttpServer server =
        HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext(
        "/events",
        exchange -> {
          byte[] body = exchange.getRequestBody().readAllBytes();
          Map<String, List<String>> headers = new HashMap<>();
          exchange.getRequestHeaders().forEach((k, v) -> headers.put(k, List.copyOf(v)));
          Request request = new Request(headers, body);
          got.put(keyOf.apply(request), request);
          exchange.sendResponseHeaders(204, -1);
          exchange.close();
        });
    server.start();
    return server;
  }

  /**
   * Publishes the table through the webhook publisher to a real HTTP server, checks the signature
   * with the Standard Webhooks library and pgoutbox's own headers with an independent RFC 8187
   * decoder and with {@link WebhookHeaders}, then {@code check}.
   */
  private void webhookRoundTrip(CloudEvents cloudEvents, WebhookCheck check) throws Exception {
    Map<String, Request> got = new ConcurrentHashMap<>();
    HttpServer server = startReceiver(got, r -> first(r, WebhookEventIds.HEADER));
    List<OutboxMessage> sent;
    try {
      WebhookPublisher.Builder builder =
          WebhookPublisher.builder(
                  URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/events"))
              .standardWebhooksSecret(SECRET);
      if (cloudEvents != null) {
        builder.cloudEvents(cloudEvents);
      }
      sent = appendAndDrain(builder.build());
    } finally {
      server.stop(0);
    }
    com.standardwebhooks.Webhook oracle = new com.standardwebhooks.Webhook(SECRET);
    for (OutboxMessage m : sent) {
      Request request = got.get(m.id().toString());
      String where = m.aggregateId();
      assertThat(request).as(where).isNotNull();
      Map<String, List<String>> lower = new HashMap<>();
      request
          .headers()
          .forEach(
              (name, values) -> {
                assertThat(lower.put(name.toLowerCase(Locale.ROOT), values))
                    .as("%s: one header named %s", where, name)
                    .isNull();
                assertThat(values).as("%s: %s", where, name).hasSize(1);
                assertThat(values.get(0).chars())
                    .as("%s: %s is printable ASCII", where, name)
                    .allMatch(c -> c >= 0x20 && c < 0x7F);
              });
      // The Standard Webhooks library's own verifier (not pgoutbox code) accepts the request.
      oracle.verify(new String(request.body(), StandardCharsets.UTF_8), lower);
      assertThat(
              StandardWebhooks.verifier(List.of(SECRET)).isValid(request.headers(), request.body()))
          .isTrue();
      Map<String, String> expected = new LinkedHashMap<>(m.headers());
      expected.put(WebhookPublisher.EVENT_TYPE_HEADER, m.eventType());
      expected.put(WebhookPublisher.AGGREGATE_TYPE_HEADER, m.aggregateType());
      expected.put(WebhookPublisher.AGGREGATE_ID_HEADER, m.aggregateId());
      expected.forEach(
          (name, value) -> {
            String key = name.toLowerCase(Locale.ROOT);
            List<String> plain = lower.get(key);
            List<String> encoded = lower.get(key + "*");
            assertThat(plain == null ^ encoded == null)
                .as("%s: %s sent once, plain or encoded", where, name)
                .isTrue();
            String read = plain != null ? plain.get(0) : rfc8187Decode(encoded.get(0));
            assertThat(read).as("%s: %s", where, name).isEqualTo(value);
            assertThat(WebhookHeaders.get(request.headers(), name))
                .as("%s: %s", where, name)
                .isEqualTo(value);
          });
      assertThat(WebhookEventIds.eventId(request.headers())).isEqualTo(m.id());
      check.check(m, request);
    }
  }

  private static String first(Request request, String name) {
    for (Map.Entry<String, List<String>> h : request.headers().entrySet()) {
      if (h.getKey().equalsIgnoreCase(name)) {
        return h.getValue().get(0);
      }
    }
    return null;
  }

  /**
   * An RFC 8187 ext-value decoder that is not pgoutbox's: {@code UTF-8''} then the JDK's URL
   * decoder on the rest.
   */
  private static String rfc8187Decode(String extValue) {
    assertThat(extValue).startsWith("UTF-8''");
    String rest = extValue.substring("UTF-8''".length());
    // RFC 8187 attr-chars only: every other byte is %XY.
    assertThat(rest.chars())
        .as(extValue)
        .allMatch(c -> Character.isLetterOrDigit(c) || "!#$&+-.^_`|~%".indexOf(c) >= 0);
    return specPercentDecode(rest);
  }

  @Test
  void aStoredHeaderNamedLikeAnEnvelopeHeaderNeverGivesTwoHeadersOfOneName() throws Exception {
    // A row written before the writer refused these names (or by hand): the envelope's wins.
    Map<String, String> forged = new LinkedHashMap<>();
    for (String name :
        List.of(
            "ce_type",
            "ce_id",
            "content-type",
            "Content-Type",
            "event_type",
            "event_id",
            "aggregate_id",
            "ce-type",
            "Nats-Msg-Id",
            "X-Pgoutbox-Event-Type",
            "Idempotency-Key",
            "webhook-id")) {
      forged.put(name, "forged");
    }
    forged.put("x-kept", "kept");
    kafka.createTopic("clash", 1);
    OutboxMessage row =
        new OutboxMessage(
            UUID.randomUUID(), 1, "clash", "c-1", "clash.made", "{}", forged, 1, Instant.now());

    new RelayDrive(db).truncate().write(List.of(row));
    drainOne(
        KafkaPublisher.builder(kafka.bootstrapServers())
            .cloudEvents(CloudEvents.binary(SOURCE))
            .build());
    try (KafkaConsumer<String, byte[]> consumer =
        KafkaReadBack.consumer(kafka.bootstrapServers(), "clash")) {
      consumer.subscribe(List.of("clash"));
      List<ConsumerRecord<String, byte[]>> records =
          List.of(KafkaReadBack.awaitFirst(consumer, "the record"));
      Map<String, Integer> counts = new HashMap<>();
      records.get(0).headers().forEach(h -> counts.merge(h.key(), 1, Integer::sum));
      assertThat(counts).allSatisfy((name, n) -> assertThat(n).as(name).isEqualTo(1));
      assertThat(text(records.get(0), "event_type")).isEqualTo("clash.made");
      assertThat(text(records.get(0), "ce_type")).isEqualTo("clash.made");
      assertThat(text(records.get(0), "ce_id")).isEqualTo(text(records.get(0), "event_id"));
      assertThat(text(records.get(0), "content-type")).isEqualTo("application/json");
      assertThat(text(records.get(0), "x-kept")).isEqualTo("kept");
      assertThat(counts).doesNotContainKey("Content-Type").doesNotContainKey("aggregate_id");
    }

    try (io.nats.client.Connection connection = Nats.connect(NATS)) {
      String prefix = "pgoutbox-clash-" + UUID.randomUUID().toString().substring(0, 8);
      NatsReadBack.addStream(connection, prefix);
      try {
        JetStreamSubscription sub = NatsReadBack.subscribeOrdered(connection, prefix);
        new RelayDrive(db).truncate().write(List.of(row));
        drainOne(
            NatsPublisher.builder(NATS)
                .routing(NatsRouting.byTypes(prefix))
                .cloudEvents(CloudEvents.binary(SOURCE))
                .build());
        Message message = sub.nextMessage(Duration.ofSeconds(30));
        Headers h = message.getHeaders();
        Set<String> names = new HashSet<>();
        h.keySet().forEach(n -> assertThat(names.add(n.toLowerCase(Locale.ROOT))).as(n).isTrue());
        h.keySet().forEach(n -> assertThat(h.get(n)).as(n).hasSize(1));
        assertThat(h.getFirst("Nats-Msg-Id")).isEqualTo(row.id().toString());
        assertThat(h.getFirst("event_type")).isEqualTo("clash.made");
        assertThat(h.getFirst("aggregate_id")).isEqualTo("c-1");
        assertThat(h.getFirst("ce-type")).isEqualTo("clash.made");
        assertThat(h.getFirst("x-kept")).isEqualTo("kept");
        assertThat(names).doesNotContain("content-type", "ce_type", "ce_id", "event_id");
      } finally {
        connection.jetStreamManagement().deleteStream(prefix);
      }
    }

    Map<String, Request> got = new ConcurrentHashMap<>();
    HttpServer server = startReceiver(got, r -> "only");
    try {
      new RelayDrive(db).truncate().write(List.of(row));
      drainOne(
          WebhookPublisher.builder(
                  URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/events"))
              .standardWebhooksSecret(SECRET)
              .cloudEvents(CloudEvents.binary(SOURCE))
              .build());
    } finally {
      server.stop(0);
    }
    Request request = got.get("only");
    request.headers().forEach((n, v) -> assertThat(v).as(n).hasSize(1));
    assertThat(first(request, "Content-Type")).isEqualTo("application/json");
    assertThat(first(request, "ce-type")).isEqualTo("clash.made");
    assertThat(first(request, WebhookPublisher.EVENT_TYPE_HEADER)).isEqualTo("clash.made");
    assertThat(first(request, WebhookEventIds.HEADER)).isEqualTo(row.id().toString());
    assertThat(first(request, "webhook-id")).isEqualTo(row.id().toString());
    assertThat(first(request, "x-kept")).isEqualTo("kept");
    assertThat(first(request, "event_type")).isNull();
  }

  private static void drainOne(Publisher publisher) throws Exception {
    RelayDrive drive = new RelayDrive(db);
    try {
      drive.drain(publisher, 1, 10, Duration.ofMinutes(1));
    } finally {
      publisher.close();
    }
    assertThat(drive.deadLetters()).isEmpty();
    assertThat(drive.failedAttempts()).isZero();
  }

  interface NatsCheck {
    void check(OutboxMessage sent, Message received) throws Exception;
  }

  /** Publishes the table through NATS, checks pgoutbox's headers, then {@code check}. */
  private void natsRoundTrip(CloudEvents cloudEvents, NatsCheck check) throws Exception {
    try (io.nats.client.Connection connection = Nats.connect(NATS)) {
      String prefix = "pgoutbox-wire-" + UUID.randomUUID().toString().substring(0, 8);
      NatsReadBack.addStream(connection, prefix);
      try {
        JetStreamSubscription sub = NatsReadBack.subscribeOrdered(connection, prefix);
        NatsPublisher.Builder builder =
            NatsPublisher.builder(NATS).routing(NatsRouting.byTypes(prefix));
        if (cloudEvents != null) {
          builder.cloudEvents(cloudEvents);
        }
        List<OutboxMessage> sent = appendAndDrain(builder.build());
        Map<UUID, Message> got = new HashMap<>();
        while (got.size() < sent.size()) {
          Message message = sub.nextMessage(Duration.ofSeconds(30));
          assertThat(message).as("message %d of %d", got.size() + 1, sent.size()).isNotNull();
          got.put(NatsEventIds.eventId(message), message);
        }
        for (OutboxMessage m : sent) {
          Message message = got.get(m.id());
          Headers h = message.getHeaders();
          Set<String> names = new HashSet<>();
          for (String name : h.keySet()) {
            assertThat(names.add(name.toLowerCase(Locale.ROOT)))
                .as("one header named %s", name)
                .isTrue();
            assertThat(h.get(name)).hasSize(1);
            assertThat(h.getFirst(name).chars())
                .as("%s is printable ASCII", name)
                .allMatch(c -> c >= 0x20 && c < 0x7F);
          }
          Map<String, String> expected = new LinkedHashMap<>(m.headers());
          expected.put(NatsPublisher.EVENT_TYPE_HEADER, m.eventType());
          expected.put(NatsPublisher.AGGREGATE_TYPE_HEADER, m.aggregateType());
          expected.put(NatsPublisher.AGGREGATE_ID_HEADER, m.aggregateId());
          expected.forEach(
              (name, value) ->
                  assertThat(NatsHeaders.get(message, name))
                      .as("%s of %s", name, m.aggregateId())
                      .isEqualTo(value));
          check.check(m, message);
        }
      } finally {
        connection.jetStreamManagement().deleteStream(prefix);
      }
    }
  }

  /**
   * Appends the table with the real writer and drains it through {@code publisher}; answers the
   * messages as the relay claimed them. Not one event may fail, even once.
   */
  private static List<OutboxMessage> appendAndDrain(Publisher publisher) throws Exception {
    RelayDrive drive = new RelayDrive(db).truncate();
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    db.dsl().transaction(tx -> outbox.appendAll(tx.dsl(), table()));
    Map<UUID, OutboxMessage> claimed = new ConcurrentHashMap<>();
    Publisher recording =
        new Publisher() {
          @Override
          public CompletionStage<List<PublishResult>> publish(List<OutboxMessage> batch) {
            batch.forEach(m -> claimed.put(m.id(), m));
            return publisher.publish(batch);
          }

          @Override
          public String messagingSystem() {
            return publisher.messagingSystem();
          }
        };
    try {
      drive.drain(recording, 1, 50, Duration.ofMinutes(1));
    } finally {
      publisher.close();
    }
    assertThat(drive.deadLetters()).as("dead letters").isEmpty();
    assertThat(drive.failedAttempts()).as("events that failed at least once").isZero();
    assertThat(claimed).hasSize(table().size());
    return List.copyOf(claimed.values());
  }

  /** The CloudEvents attributes pgoutbox maps an event to. */
  private static Map<String, String> ceAttributes(OutboxMessage m) {
    Map<String, String> a = new LinkedHashMap<>();
    a.put("specversion", "1.0");
    a.put("id", m.id().toString());
    a.put("source", SOURCE);
    a.put("type", m.eventType());
    a.put("subject", m.aggregateId());
    a.put("time", m.createdAt().toString());
    return a;
  }

  /** What the CloudEvents SDK (not pgoutbox code) read. */
  private static void assertSdkEvent(io.cloudevents.CloudEvent ce, OutboxMessage m)
      throws Exception {
    assertThat(ce.getSpecVersion().toString()).isEqualTo("1.0");
    assertThat(ce.getId()).isEqualTo(m.id().toString());
    assertThat(ce.getSource()).isEqualTo(URI.create(SOURCE));
    assertThat(ce.getType()).isEqualTo(m.eventType());
    assertThat(ce.getSubject()).isEqualTo(m.aggregateId());
    assertThat(ce.getTime()).isEqualTo(OffsetDateTime.ofInstant(m.createdAt(), ZoneOffset.UTC));
    assertThat(ce.getDataContentType()).isEqualTo("application/json");
    assertThat(JSON.readTree(ce.getData().toBytes())).isEqualTo(JSON.readTree(m.payload()));
  }

  /** What pgoutbox's own readers read. */
  private static void assertOurs(CloudEvent ce, OutboxMessage m) {
    assertThat(ce.id()).isEqualTo(m.id().toString());
    assertThat(ce.source()).isEqualTo(SOURCE);
    assertThat(ce.type()).isEqualTo(m.eventType());
    assertThat(ce.subject()).isEqualTo(m.aggregateId());
    assertThat(ce.time()).isEqualTo(OffsetDateTime.ofInstant(m.createdAt(), ZoneOffset.UTC));
    assertThat(ce.dataContentType()).isEqualTo("application/json");
    try {
      assertThat(JSON.readTree(ce.data())).isEqualTo(JSON.readTree(m.payload()));
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  /**
   * A percent-decoder that is not pgoutbox's: the JDK's URL decoder, which decodes {@code %XY} as
   * UTF-8, with {@code +} (which it would read as a space, and the binding leaves as it is) kept.
   */
  private static String specPercentDecode(String value) {
    return URLDecoder.decode(value.replace("+", "%2B"), StandardCharsets.UTF_8);
  }

  private static OutboxMessage probe(OutboxEvent e) {
    return new OutboxMessage(
        UUID.randomUUID(),
        1,
        e.aggregateType(),
        e.aggregateId(),
        e.eventType(),
        "{}",
        Map.of(),
        1,
        Instant.now());
  }

  private static String text(ConsumerRecord<?, ?> r, String header) {
    Header h = r.headers().lastHeader(header);
    return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
  }
}

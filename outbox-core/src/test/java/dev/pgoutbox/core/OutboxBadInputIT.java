package dev.pgoutbox.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.node.TextNode;
import dev.pgoutbox.testing.TestSchema;
import java.math.BigDecimal;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Function;
import java.util.stream.Stream;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Each bad input is refused with a message naming the field and the rule, nothing is written, and
 * the host's transaction stays usable: the test commits other work in it afterwards.
 */
class OutboxBadInputIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static DSLContext host;
  private static Outbox outbox;

  @BeforeAll
  static void setUp() {
    db.execute("CREATE TABLE orders (id bigint PRIMARY KEY, status text NOT NULL)");
    host = DSL.using(db.dataSource(), SQLDialect.POSTGRES);
    outbox = Outbox.builder().schema(db.schema()).build();
  }

  @BeforeEach
  void empty() {
    db.execute("TRUNCATE orders, outbox_events");
  }

  /** A bean Jackson cannot serialize: its getter throws. */
  public static final class Exploding {
    public String getValue() {
      throw new IllegalStateException("the value is not loaded");
    }
  }

  /** A bean that refers to itself. */
  public static final class Loop {
    public Loop getSelf() {
      return this;
    }
  }

  private static OutboxEvent withPayload(Object payload) {
    return OutboxEvent.of("order", "1", "order.created", payload);
  }

  private static Map<String, Object> map(String key, Object value) {
    Map<String, Object> map = new HashMap<>();
    map.put(key, value);
    return map;
  }

  static Stream<Arguments> badEvents() {
    return Stream.of(
        bad(
            "null aggregateType",
            tx -> outbox.append(tx, OutboxEvent.of(null, "1", "order.created", Map.of())),
            "aggregateType must not be null"),
        bad(
            "blank aggregateId",
            tx -> outbox.append(tx, OutboxEvent.of("order", "  ", "order.created", Map.of())),
            "aggregateId must not be blank"),
        bad(
            "empty eventType",
            tx -> outbox.append(tx, OutboxEvent.of("order", "1", "", Map.of())),
            "eventType must not be blank"),
        bad(
            "aggregateId of 101 characters",
            tx -> outbox.append(tx, OutboxEvent.of("order", "x".repeat(101), "t", Map.of())),
            "aggregateId must be at most 100 characters, was 101"),
        bad(
            "eventType of 101 emoji (counted as PostgreSQL does)",
            tx ->
                outbox.append(
                    tx, OutboxEvent.of("order", "1", "\uD83D\uDE00".repeat(101), Map.of())),
            "eventType must be at most 100 characters, was 101"),
        bad(
            "aggregateType with U+0000",
            tx -> outbox.append(tx, OutboxEvent.of("or\u0000der", "1", "t", Map.of())),
            "aggregateType must not contain U+0000 (PostgreSQL cannot store it), found at index 2"),
        bad("null payload", tx -> outbox.append(tx, withPayload(null)), "payload must not be null"),
        bad(
            "String payload",
            tx -> outbox.append(tx, withPayload("{\"id\": 1}")),
            "payload must not be a String, which is ambiguous: wrap JSON text in RawJson.of(text)"),
        bad(
            "payload whose getter throws",
            tx -> outbox.append(tx, withPayload(new Exploding())),
            "event (aggregate order/1, type order.created): payload of type "
                + Exploding.class.getName()
                + " cannot be serialized to JSON: the value is not loaded"),
        bad(
            "payload with no properties",
            tx -> outbox.append(tx, withPayload(new Object())),
            "payload of type java.lang.Object cannot be serialized to JSON: No serializer found"),
        bad(
            "payload referring to itself",
            tx -> outbox.append(tx, withPayload(new Loop())),
            "cannot be serialized to JSON: Direct self-reference"),
        bad(
            "U+0000 in a payload string",
            tx ->
                outbox.append(
                    tx, withPayload(Map.of("items", List.of(Map.of("note", "a\u0000b"))))),
            "payload string at /items/0/note must not contain U+0000 (PostgreSQL cannot store it)"),
        bad(
            "U+0000 in a payload key",
            tx -> outbox.append(tx, withPayload(Map.of("no\u0000te", 1))),
            "payload key at /no\\u0000te must not contain U+0000"),
        bad(
            "unpaired surrogate in a payload string",
            tx -> outbox.append(tx, withPayload(Map.of("note", "broken \uD83D emoji"))),
            "payload string at /note must not contain an unpaired surrogate (not valid UTF-8),"
                + " found \\ud83d at index 7"),
        bad(
            "number beyond PostgreSQL's numeric",
            tx -> outbox.append(tx, withPayload(map("total", new BigDecimal("1E+131072")))),
            "payload number at /total is out of PostgreSQL's numeric range (at most 131072 digits"
                + " before the decimal point and 16383 after), was 1E+131072"),
        bad(
            "raw JSON that is not JSON",
            tx -> outbox.append(tx, withPayload(RawJson.of("{\"id\": 1,}"))),
            "payload is not valid JSON: Unexpected character ('}'"),
        bad(
            "raw JSON with two values",
            tx -> outbox.append(tx, withPayload(RawJson.of("{} {}"))),
            "payload must be one JSON value, found more after it at offset 3"),
        bad(
            "raw JSON with an escaped U+0000",
            tx -> outbox.append(tx, withPayload(RawJson.of("{\"a\": \"\\u0000\"}"))),
            "payload string at /a must not contain U+0000"),
        bad(
            "null header value",
            tx -> outbox.append(tx, withPayload(Map.of()).withHeader("traceparent", null)),
            "headers value of 'traceparent' must not be null"),
        bad(
            "U+0000 in a header key",
            tx -> outbox.append(tx, withPayload(Map.of()).withHeader("trace\u0000", "1")),
            "headers key 'trace\\u0000' must be a token"),
        bad(
            "bad event in the middle of appendAll",
            tx ->
                outbox.appendAll(
                    tx,
                    List.of(
                        withPayload(Map.of("n", 1)),
                        withPayload(Map.of("n", 2)),
                        OutboxEvent.of("order", "3", "order.created", new Exploding()))),
            "events[2] (aggregate order/3, type order.created): payload of type"),
        bad(
            "null event in appendAll",
            tx -> outbox.appendAll(tx, java.util.Arrays.asList(withPayload(Map.of()), null)),
            "events[1] must not be null"),
        bad(
            "one explicit id twice in appendAll",
            tx -> {
              UUID id = UUID.fromString("0190f2a0-0000-7000-8000-000000000001");
              return outbox.appendAll(
                  tx, List.of(withPayload(Map.of()).withId(id), withPayload(Map.of()).withId(id)));
            },
            "events[1] (aggregate order/1, type order.created): id"
                + " 0190f2a0-0000-7000-8000-000000000001 is used by an earlier event"),
        bad(
            "payload one byte over the limit (JSON text in UTF-8)",
            // "é" is 2 bytes: 524287 of them and the quotes make 1048576 bytes, one more is over.
            tx -> outbox.append(tx, withPayload(TextNode.valueOf("\u00e9".repeat(524_288)))),
            "event (aggregate order/1, type order.created): payload is 1048578 bytes (JSON in"
                + " UTF-8), more than the limit of 1048576 (Outbox.Builder.maxPayloadBytes)"),
        bad(
            "raw JSON payload of 8 MiB",
            tx -> outbox.append(tx, withPayload(RawJson.of("\"" + "a".repeat(8_388_606) + "\""))),
            "payload is 8388608 bytes (JSON in UTF-8), more than the limit of 1048576"
                + " (Outbox.Builder.maxPayloadBytes)"),
        bad(
            "10,000 headers",
            tx ->
                outbox.append(
                    tx,
                    OutboxEvent.builder()
                        .aggregate("order", "1")
                        .eventType("order.created")
                        .payload(Map.of())
                        .headers(manyHeaders(10_000))
                        .build()),
            "event (aggregate order/1, type order.created): headers are 10000 entries, more than"
                + " the limit of 64 (Outbox.Builder.maxHeaders)"),
        bad(
            "65 headers, the hook's counted with the event's",
            tx ->
                Outbox.builder()
                    .schema(db.schema())
                    .headers(() -> manyHeaders(64))
                    .build()
                    .append(tx, withPayload(Map.of()).withHeader("tenant", "t1")),
            "headers are 65 entries, more than the limit of 64 (Outbox.Builder.maxHeaders)"),
        bad(
            "one header value of 16 KiB",
            tx -> outbox.append(tx, withPayload(Map.of()).withHeader("k", "v".repeat(16_384))),
            "headers are 16385 bytes (keys and values in UTF-8), more than the limit of 16384"
                + " (Outbox.Builder.maxHeaderBytes)"),
        bad(
            "oversized event in the middle of appendAll",
            tx ->
                outbox.appendAll(
                    tx,
                    List.of(
                        withPayload(Map.of("n", 1)),
                        withPayload(Map.of("n", 2)),
                        withPayload(Map.of("blob", "x".repeat(1_048_576))))),
            "events[2] (aggregate order/1, type order.created): payload is 1048587 bytes"),
        bad(
            "null header value from the headers hook",
            tx -> {
              Map<String, String> context = new LinkedHashMap<>();
              context.put("correlation-id", null);
              return Outbox.builder()
                  .schema(db.schema())
                  .headers(() -> context)
                  .build()
                  .append(tx, withPayload(Map.of()));
            },
            "headers from the headers hook value of 'correlation-id' must not be null"));
  }

  private static Map<String, String> manyHeaders(int count) {
    Map<String, String> headers = new LinkedHashMap<>();
    for (int i = 0; i < count; i++) {
      headers.put("h" + i, "v");
    }
    return headers;
  }

  private static Arguments bad(String name, Function<DSLContext, Object> append, String message) {
    return Arguments.of(name, append, message);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badEvents")
  void badInputIsRefusedBeforeAnythingIsWrittenAndTheTransactionGoesOn(
      String name, Function<DSLContext, Object> append, String message) {
    host.transaction(
        tx -> {
          tx.dsl().execute("INSERT INTO orders VALUES (1, 'new')");
          assertThatThrownBy(() -> append.apply(tx.dsl()))
              .isInstanceOf(InvalidEventException.class)
              .hasMessageContaining(message);
          // No statement failed: the transaction is not aborted and takes more work.
          tx.dsl().execute("INSERT INTO orders VALUES (2, 'new')");
        });

    assertThat(Stored.count(db, "orders")).isEqualTo(2);
    assertThat(Stored.eventCount(db)).isZero();
  }

  @Test
  void failingHeadersHookIsReportedAndNothingIsWritten() {
    Outbox broken =
        Outbox.builder()
            .schema(db.schema())
            .headers(
                () -> {
                  throw new IllegalStateException("no span");
                })
            .build();
    host.transaction(
        tx -> {
          assertThatThrownBy(() -> broken.append(tx.dsl(), withPayload(Map.of())))
              .isInstanceOf(OutboxException.class)
              .hasMessage("The headers hook failed: java.lang.IllegalStateException: no span");
          tx.dsl().execute("INSERT INTO orders VALUES (1, 'new')");
        });
    assertThat(Stored.count(db, "orders")).isEqualTo(1);
    assertThat(Stored.eventCount(db)).isZero();
  }

  @Test
  void valuesAtTheLimitsAreStored() {
    String hundredEmoji = "\uD83D\uDE00".repeat(100);
    host.transaction(
        tx ->
            outbox.appendAll(
                tx.dsl(),
                List.of(
                    OutboxEvent.of("x".repeat(100), hundredEmoji, "y".repeat(100), Map.of()),
                    withPayload(RawJson.of("1e131071")),
                    withPayload(RawJson.of("1e-16383")),
                    withPayload(RawJson.of("{\"emoji\": \"\\ud83d\\ude00\"}")))));

    assertThat(Stored.events(db))
        .extracting(row -> row.getAggregateId())
        .first()
        .isEqualTo(hundredEmoji);
    assertThat(Stored.eventCount(db)).isEqualTo(4);
  }

  @Test
  void eventsAtTheSizeLimitsAreStored() {
    // 1 MiB of JSON text exactly, in 2-byte and 4-byte characters; 64 headers of 16 KiB together.
    String payload = "\"" + "\uD83D\uDE00".repeat(262_143) + "\u00e9" + "\"";
    Map<String, String> headers = manyHeaders(63);
    int used = 0;
    for (Map.Entry<String, String> header : headers.entrySet()) {
      used += header.getKey().length() + header.getValue().length();
    }
    headers.put("last", "v".repeat(16_384 - used - "last".length()));
    host.transaction(
        tx ->
            outbox.append(
                tx.dsl(),
                OutboxEvent.builder()
                    .aggregate("order", "1")
                    .eventType("order.created")
                    .payload(RawJson.of(payload))
                    .headers(headers)
                    .build()));
    assertThat(Stored.eventCount(db)).isEqualTo(1);
  }

  @Test
  void raisedLimitsTakeLargerEventsAndLoweredOnesRefuseSmallerOnes() {
    Outbox roomy =
        Outbox.builder()
            .schema(db.schema())
            .maxPayloadBytes(8_388_608)
            .maxHeaders(10_000)
            .maxHeaderBytes(1_048_576)
            .build();
    Outbox tight = Outbox.builder().schema(db.schema()).maxPayloadBytes(10).maxHeaders(0).build();
    host.transaction(
        tx -> {
          roomy.append(
              tx.dsl(),
              OutboxEvent.builder()
                  .aggregate("order", "1")
                  .eventType("order.created")
                  .payload(RawJson.of("\"" + "a".repeat(8_388_606) + "\""))
                  .headers(manyHeaders(10_000))
                  .build());
          assertThatThrownBy(() -> tight.append(tx.dsl(), withPayload(Map.of("n", 12345))))
              .isInstanceOf(InvalidEventException.class)
              .hasMessageContaining(
                  "payload is 11 bytes (JSON in UTF-8), more than the limit of 10");
          assertThatThrownBy(
                  () -> tight.append(tx.dsl(), withPayload(Map.of()).withHeader("k", "v")))
              .isInstanceOf(InvalidEventException.class)
              .hasMessageContaining("headers are 1 entries, more than the limit of 0");
        });
    assertThat(Stored.eventCount(db)).isEqualTo(1);
  }

  @Test
  void anInsertThatFailsInPostgresqlIsWrappedWithTheEventAndThePostgresqlReason() {
    UUID id = UUID.fromString("0190f2a0-0000-7000-8000-000000000002");
    host.transaction(tx -> outbox.append(tx.dsl(), withPayload(Map.of()).withId(id)));

    assertThatThrownBy(
            () -> host.transaction(tx -> outbox.append(tx.dsl(), withPayload(Map.of()).withId(id))))
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining(
            "Could not append event "
                + id
                + " (aggregate order/1, type order.created), to "
                + db.schema()
                + ".outbox_events: ")
        .hasMessageContaining("outbox_events_pkey");
    assertThat(Stored.eventCount(db)).isEqualTo(1);
  }

  @Test
  void anInsertOnAPlainConnectionThatFailsIsWrappedAlikeAndTheStatementIsReusedAfterwards()
      throws Exception {
    UUID id = UUID.fromString("0190f2a0-0000-7000-8000-000000000003");
    try (java.sql.Connection connection = db.connect()) {
      connection.setAutoCommit(false);
      // More appends than pgjdbc's prepareThreshold: the kept statement text is server-prepared.
      for (int i = 0; i < 6; i++) {
        outbox.append(connection, withPayload(Map.of("n", i)));
      }
      outbox.append(connection, withPayload(Map.of()).withId(id));
      connection.commit();

      assertThatThrownBy(() -> outbox.append(connection, withPayload(Map.of()).withId(id)))
          .isInstanceOf(OutboxException.class)
          .hasMessageContaining(
              "Could not append event "
                  + id
                  + " (aggregate order/1, type order.created), to "
                  + db.schema()
                  + ".outbox_events: ")
          .hasMessageContaining("outbox_events_pkey");
      connection.rollback();
      outbox.appendAll(
          connection, List.of(withPayload(Map.of("n", 7)), withPayload(Map.of("n", 8))));
      connection.commit();
    }
    assertThat(Stored.eventCount(db)).isEqualTo(9);
  }
}

package dev.pgoutbox.core;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static dev.pgoutbox.db.jooq.Tables.PROCESSED_EVENTS;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgoutbox.core.internal.Texts;
import dev.pgoutbox.db.jooq.tables.records.OutboxEventsRecord;
import dev.pgoutbox.testing.TestSchema;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Hostile strings in every field the host hands the writer and the inbox, against a real
 * PostgreSQL. Each one is either stored verbatim (read back through jOOQ and compared exactly) or
 * refused with {@link InvalidEventException} / {@link IllegalArgumentException} naming the field;
 * never an SQL error, never a partial write, and the host's transaction takes more work afterwards
 * (a business row is committed in it after every attempt).
 *
 * <p>The random part is seeded: the seed is printed, and {@code -Dpgoutbox.fuzz.seed=N} replays a
 * run.
 */
class WriterFuzzIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated(2);

  private static final long SEED = Long.getLong("pgoutbox.fuzz.seed", System.nanoTime());
  private static final int RANDOM_CASES_PER_FIELD = 150;
  private static final ObjectMapper JSON = new ObjectMapper();

  private static DSLContext host;
  private static Outbox outbox;
  private static Inbox inbox;
  private static final AtomicLong orderIds = new AtomicLong();

  @BeforeAll
  static void setUp() {
    System.out.println(
        "WriterFuzzIT seed: " + SEED + " (replay with -Dpgoutbox.fuzz.seed=" + SEED + ")");
    db.execute("CREATE TABLE orders (id bigint PRIMARY KEY)");
    host = DSL.using(db.dataSource(), SQLDialect.POSTGRES);
    outbox = Outbox.builder().schema(db.schema()).build();
    inbox = Inbox.builder().schema(db.schema()).build();
  }

  /** Hand-picked hostile strings, each tried in every field. */
  static List<String> adversarial() {
    List<String> cases =
        new ArrayList<>(
            List.of(
                "'",
                "''",
                "\"",
                "\";--",
                "'; DROP TABLE outbox_events; --",
                "x' OR '1'='1",
                "$$",
                "$tag$ select 1 $tag$",
                "\\",
                "\\\\'",
                "\\x00",
                "%",
                "_",
                "%_%",
                "?",
                "$1",
                ":name",
                "{}",
                "{\"a\":1}",
                "[",
                "null",
                "E'\\n'",
                "/* comment",
                "\uD83D\uDE00",
                "\uD83D\uDC68\u200D\uD83D\uDC69\u200D\uD83D\uDC67",
                "\u202Eevil\u202C",
                "\u05E9\u05DC\u05D5\u05DD",
                "\u0627\u0644\u0633\u0644\u0627\u0645",
                "e\u0301",
                "\u00E9",
                "Z\u0351\u036B\u0343\u036A\u0302\u036B\u033D\u034F",
                "\uD800\uDC00",
                "\uDBFF\uDFFF",
                "\uFEFF",
                "\uFFFD",
                "\uFFFF",
                "\u00A0",
                "\u2028\u2029",
                "\t",
                " ",
                "",
                " x ",
                "\r\n",
                "a\u0001b\u001Fc\u007F",
                "\u001B[31mred\u001B[0m",
                "\u0000",
                "a\u0000",
                "\uD83D",
                "\uDE00",
                "x\uDE00\uD83D",
                "x".repeat(99),
                "x".repeat(100),
                "x".repeat(101),
                "\uD83D\uDE00".repeat(100),
                "\uD83D\uDE00".repeat(101),
                "e\u0301".repeat(50),
                "e\u0301".repeat(51),
                "'".repeat(100),
                "\\".repeat(100),
                "x".repeat(201),
                "y".repeat(20_000)));
    return cases;
  }

  /** A random string from pools of troublesome characters, of a length up to about 130. */
  static String random(Random random) {
    int length =
        switch (random.nextInt(10)) {
          case 0 -> 0;
          case 1 -> 95 + random.nextInt(10); // around the column's limit
          case 2 -> 190 + random.nextInt(20); // around the inbox's limit
          default -> 1 + random.nextInt(30);
        };
    StringBuilder out = new StringBuilder();
    while (out.length() < length) {
      switch (random.nextInt(12)) {
        case 0 -> out.append("'\"\\;-$%_*/?:{}[]()".charAt(random.nextInt(18)));
        case 1 -> out.append((char) random.nextInt(0x20)); // controls, U+0000 among them
        case 2 -> out.append((char) (0x7F + random.nextInt(0x21))); // DEL and C1 controls
        case 3 -> out.appendCodePoint(0x1F300 + random.nextInt(0x300)); // astral: emoji
        case 4 -> out.append((char) (0x0300 + random.nextInt(0x70))); // combining marks
        case 5 ->
            out.append(
                "\u200E\u200F\u202A\u202B\u202C\u202D\u202E\u2066\u2069".charAt(random.nextInt(9)));
        case 6 -> out.append((char) (0x0590 + random.nextInt(0x1F0))); // Hebrew, Arabic
        case 7 -> {
          if (random.nextInt(4) == 0) {
            out.append((char) (0xD800 + random.nextInt(0x800))); // a lone surrogate
          } else {
            out.append((char) (0x4E00 + random.nextInt(0x100)));
          }
        }
        case 8 -> out.append(" \t\r\n\u00A0\u3000".charAt(random.nextInt(6)));
        default -> out.append((char) (0x21 + random.nextInt(0x5E)));
      }
    }
    return out.toString();
  }

  /** The documented rules for a name column: what the writer must store, and nothing else. */
  private static boolean storableName(String value, int maxCodePoints) {
    return !value.isBlank()
        && value.codePointCount(0, value.length()) <= maxCodePoints
        && storableText(value);
  }

  /** No U+0000 and no unpaired surrogate: PostgreSQL stores every other string unchanged. */
  private static boolean storableText(String value) {
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c == '\u0000') {
        return false;
      }
      if (Character.isHighSurrogate(c)
          && i + 1 < value.length()
          && Character.isLowSurrogate(value.charAt(i + 1))) {
        i++;
      } else if (Character.isSurrogate(c)) {
        return false;
      }
    }
    return true;
  }

  private enum Field {
    AGGREGATE_TYPE("aggregateType"),
    AGGREGATE_ID("aggregateId"),
    EVENT_TYPE("eventType"),
    HEADER_KEY("headers key"),
    HEADER_VALUE("headers value"),
    PAYLOAD_KEY("payload key"),
    PAYLOAD_STRING("payload string"),
    PAYLOAD_TEXT("payload string"),
    CONSUMER("consumer");

    final String named;

    Field(String named) {
      this.named = named;
    }
  }

  private static boolean storable(Field field, String value) {
    return switch (field) {
      case AGGREGATE_TYPE, AGGREGATE_ID, EVENT_TYPE -> storableName(value, 100);
      case CONSUMER -> storableName(value, Inbox.MAX_CONSUMER_LENGTH);
      // The key or value with its partner ("v", "traceparent") within Outbox's 16 KiB default.
      case HEADER_KEY -> headerName(value);
      case HEADER_VALUE -> storableText(value) && !overHeaderBytes(field, value);
      default -> storableText(value);
    };
  }

  /**
   * The documented rule for a header name (OutboxEvent's javadoc): an RFC 9110 token of at most 100
   * characters that no publisher writes itself, so that every broker carries it as it is.
   */
  private static boolean headerName(String value) {
    if (value.isEmpty() || value.length() > 100) {
      return false;
    }
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      boolean tchar =
          (c >= 'a' && c <= 'z')
              || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9')
              || "!#$%&'+-.^_`|~".indexOf(c) >= 0;
      if (!tchar) {
        return false;
      }
    }
    String lower = value.toLowerCase(java.util.Locale.ROOT);
    return !(lower.startsWith("ce_")
        || lower.startsWith("ce-")
        || lower.startsWith("x-pgoutbox-")
        || List.of(
                "event_id",
                "event_type",
                "aggregate_type",
                "aggregate_id",
                "nats-msg-id",
                "content-type",
                "content-length",
                "idempotency-key",
                "webhook-id",
                "webhook-timestamp",
                "webhook-signature",
                "connection",
                "expect",
                "host",
                "keep-alive",
                "proxy-connection",
                "te",
                "trailer",
                "transfer-encoding",
                "upgrade")
            .contains(lower));
  }

  private static boolean overHeaderBytes(Field field, String value) {
    int partner = field == Field.HEADER_KEY ? 1 : "traceparent".length();
    return Texts.utf8Length(value) + partner > Outbox.DEFAULT_MAX_HEADER_BYTES;
  }

  private static OutboxEvent event(Field field, String value) {
    String type = field == Field.AGGREGATE_TYPE ? value : "order";
    String id = field == Field.AGGREGATE_ID ? value : "1";
    String eventType = field == Field.EVENT_TYPE ? value : "order.created";
    Object payload =
        switch (field) {
          case PAYLOAD_KEY -> Map.of(value, 1);
          case PAYLOAD_STRING -> Map.of("items", List.of(Map.of("note", value)));
          case PAYLOAD_TEXT -> com.fasterxml.jackson.databind.node.TextNode.valueOf(value);
          default -> Map.of("n", 1);
        };
    Map<String, String> headers =
        switch (field) {
          case HEADER_KEY -> Map.of(value, "v");
          case HEADER_VALUE -> Map.of("traceparent", value);
          default -> Map.of();
        };
    return new OutboxEvent(null, type, id, eventType, payload, headers);
  }

  /**
   * Runs {@code write} in a host transaction that also inserts a business row after it, whatever
   * happened; returns the refusal, or null when the write went through. Any other exception (an SQL
   * error) fails the test.
   */
  private static @Nullable RuntimeException inHostTransaction(Function<DSLContext, Object> write) {
    long orderId = orderIds.incrementAndGet();
    AtomicReference<RuntimeException> refused = new AtomicReference<>();
    host.transaction(
        tx -> {
          try {
            write.apply(tx.dsl());
          } catch (InvalidEventException | IllegalArgumentException e) {
            refused.set(e);
          }
          tx.dsl().execute("INSERT INTO orders VALUES (?)", orderId);
        });
    assertThat(db.queryLong("select count(*) from orders where id = " + orderId))
        .as("the host's transaction took more work and committed")
        .isEqualTo(1);
    return refused.get();
  }

  private static String describe(Field field, String value) {
    return field
        + " = '"
        + Texts.printable(value)
        + "' ("
        + value.length()
        + " chars; seed "
        + SEED
        + ")";
  }

  private static void tryEvent(Field field, String value) throws Exception {
    if (field == Field.CONSUMER) {
      tryConsumer(value);
      return;
    }
    String what = describe(field, value);
    long before = Stored.eventCount(db);
    AtomicReference<UUID> id = new AtomicReference<>();
    RuntimeException refused =
        inHostTransaction(tx -> id.getAndSet(outbox.append(tx, event(field, value))));
    if (storable(field, value)) {
      assertThat(refused).as("storable, so stored: " + what).isNull();
      OutboxEventsRecord row =
          db.dsl().selectFrom(OUTBOX_EVENTS).where(OUTBOX_EVENTS.ID.eq(id.get())).fetchSingle();
      OutboxEvent expected = event(field, value);
      assertThat(row.getAggregateType()).as(what).isEqualTo(expected.aggregateType());
      assertThat(row.getAggregateId()).as(what).isEqualTo(expected.aggregateId());
      assertThat(row.getEventType()).as(what).isEqualTo(expected.eventType());
      assertThat(
              JSON.readValue(row.getHeaders().data(), new TypeReference<Map<String, String>>() {}))
          .as(what)
          .isEqualTo(expected.headers());
      assertThat(JSON.readTree(row.getPayload().data()))
          .as(what)
          .isEqualTo(JSON.valueToTree(expected.payload()));
      assertThat(Stored.eventCount(db)).as(what).isEqualTo(before + 1);
    } else {
      assertThat(refused)
          .as("not storable, so refused: " + what)
          .isInstanceOf(InvalidEventException.class);
      assertThat(refused.getMessage())
          .as(what)
          .contains(
              storableText(value) && field == Field.HEADER_VALUE
                  ? "(Outbox.Builder.maxHeaderBytes)"
                  : field.named);
      assertThat(Stored.eventCount(db)).as("nothing written: " + what).isEqualTo(before);
    }
  }

  /**
   * Events refused by the record's constructor never reach the writer; {@link #event} throws them
   * inside the host's transaction, as a host building an event from a request would.
   */
  private static void tryConsumer(String consumer) {
    String what = describe(Field.CONSUMER, consumer);
    UUID eventId = UUID.randomUUID();
    int[] handled = {0};
    RuntimeException refused =
        inHostTransaction(tx -> inbox.handleOnce(tx, consumer, eventId, () -> handled[0]++));
    long stored = db.dsl().fetchCount(PROCESSED_EVENTS, PROCESSED_EVENTS.EVENT_ID.eq(eventId));
    if (storable(Field.CONSUMER, consumer)) {
      assertThat(refused).as("storable, so stored: " + what).isNull();
      assertThat(handled[0]).as(what).isEqualTo(1);
      assertThat(
              db.dsl()
                  .select(PROCESSED_EVENTS.CONSUMER)
                  .from(PROCESSED_EVENTS)
                  .where(PROCESSED_EVENTS.EVENT_ID.eq(eventId))
                  .fetchSingle()
                  .value1())
          .as(what)
          .isEqualTo(consumer);
      RuntimeException again =
          inHostTransaction(tx -> inbox.handleOnce(tx, consumer, eventId, () -> handled[0]++));
      assertThat(again).as(what).isNull();
      assertThat(handled[0]).as("a redelivery is recognised: " + what).isEqualTo(1);
    } else {
      assertThat(refused)
          .as("not storable, so refused: " + what)
          .isInstanceOf(IllegalArgumentException.class);
      assertThat(refused.getMessage()).as(what).startsWith("consumer ");
      assertThat(handled[0]).as(what).isZero();
      assertThat(stored).as("nothing written: " + what).isZero();
    }
  }

  @Test
  void adversarialStringsInEveryFieldAreStoredVerbatimOrRefusedByName() throws Exception {
    int storedCount = 0;
    int refusedCount = 0;
    for (Field field : Field.values()) {
      for (String value : adversarial()) {
        tryEvent(field, value);
        if (storable(field, value)) {
          storedCount++;
        } else {
          refusedCount++;
        }
      }
    }
    assertThat(storedCount).isPositive();
    assertThat(refusedCount).isPositive();
  }

  @Test
  void randomStringsInEveryFieldAreStoredVerbatimOrRefusedByName() throws Exception {
    Random random = new Random(SEED);
    int storedCount = 0;
    int refusedCount = 0;
    for (Field field : Field.values()) {
      for (int i = 0; i < RANDOM_CASES_PER_FIELD; i++) {
        String value = random(random);
        tryEvent(field, value);
        if (storable(field, value)) {
          storedCount++;
        } else {
          refusedCount++;
        }
      }
    }
    // The generator reaches both sides of the rules, or this test proves nothing.
    assertThat(storedCount).as("seed " + SEED).isGreaterThan(100);
    assertThat(refusedCount).as("seed " + SEED).isGreaterThan(100);
  }

  @Test
  void batchWithOneHostileEventWritesNothingOfTheBatch() {
    Random random = new Random(SEED + 1);
    Field[] fields = Field.values();
    int refusedBatches = 0;
    for (int round = 0; round < 100; round++) {
      List<OutboxEvent> batch = new ArrayList<>();
      boolean allStorable = true;
      String description = "";
      int size = 2 + random.nextInt(6);
      for (int i = 0; i < size; i++) {
        Field field = fields[random.nextInt(fields.length - 1)]; // every field but CONSUMER
        String value = random(random);
        description += " [" + i + "] " + describe(field, value);
        if (!storable(field, value)) {
          allStorable = false;
          // A bad name or header fails in the event's constructor, before appendAll is called:
          // what reaches appendAll unchecked is the payload, so the bad string goes there.
          if (field != Field.PAYLOAD_KEY && field != Field.PAYLOAD_STRING) {
            field = Field.PAYLOAD_STRING;
            value = storableText(value) ? "\u0000" + value : value;
          }
        }
        batch.add(event(field, value));
      }
      long before = Stored.eventCount(db);
      String what = description;
      RuntimeException refused = inHostTransaction(tx -> outbox.appendAll(tx, batch));
      if (allStorable) {
        assertThat(refused).as(what).isNull();
        assertThat(Stored.eventCount(db)).as(what).isEqualTo(before + size);
      } else {
        refusedBatches++;
        assertThat(refused).as(what).isInstanceOf(InvalidEventException.class);
        assertThat(refused.getMessage()).as(what).startsWith("events[");
        assertThat(Stored.eventCount(db)).as("nothing of the batch: " + what).isEqualTo(before);
      }
    }
    assertThat(refusedBatches).as("seed " + SEED).isPositive();
  }

  @Test
  void batchWithOneBadEventAmongGoodOnesWritesNothing() {
    List<OutboxEvent> batch = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      batch.add(event(Field.PAYLOAD_STRING, "'; DROP TABLE outbox_events; -- " + i));
    }
    batch.add(13, OutboxEvent.of("order", "2", "order.paid", Map.of("note", "00-\uD83D-01")));
    long before = Stored.eventCount(db);

    RuntimeException refused = inHostTransaction(tx -> outbox.appendAll(tx, batch));

    assertThat(refused)
        .isInstanceOf(InvalidEventException.class)
        .hasMessageStartingWith(
            "events[13] (aggregate order/2, type order.paid): payload string at /note must not"
                + " contain an unpaired surrogate");
    assertThat(Stored.eventCount(db)).isEqualTo(before);
  }

  @Test
  void randomSizesAroundTheLimitsAreStoredOrRefusedByNameAndBatchesAllOrNothing() {
    // Small limits, so that sizes near them are cheap to make; multi-byte characters on the edge.
    Outbox small =
        Outbox.builder()
            .schema(db.schema())
            .maxPayloadBytes(2_000)
            .maxHeaders(8)
            .maxHeaderBytes(300)
            .build();
    String[] pieces = {"a", "\u00e9", "\u20ac", "\uD83D\uDE00", "\\", "\n"};
    Random random = new Random(SEED + 2);
    int stored = 0;
    int refused = 0;
    for (int round = 0; round < 200; round++) {
      StringBuilder text = new StringBuilder();
      int target = 1_500 + random.nextInt(400);
      while (text.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8).length < target) {
        text.append(pieces[random.nextInt(pieces.length)]);
      }
      Map<String, String> headers = new java.util.LinkedHashMap<>();
      int count = 6 + random.nextInt(4);
      for (int i = 0; i < count; i++) {
        headers.put("k" + i, pieces[random.nextInt(pieces.length)].repeat(random.nextInt(14)));
      }
      OutboxEvent event =
          OutboxEvent.builder()
              .aggregate("order", "size-" + round)
              .eventType("order.created")
              .payload(Map.of("t", text.toString()))
              .headers(headers)
              .build();
      long payloadBytes;
      try {
        payloadBytes =
            new ObjectMapper()
                .writeValueAsString(Map.of("t", text.toString()))
                .getBytes(java.nio.charset.StandardCharsets.UTF_8)
                .length;
      } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
        throw new AssertionError(e);
      }
      long headerBytes = 0;
      for (Map.Entry<String, String> h : headers.entrySet()) {
        headerBytes +=
            (h.getKey() + h.getValue()).getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
      }
      String expected =
          payloadBytes > 2_000
              ? "payload is " + payloadBytes + " bytes"
              : headers.size() > 8
                  ? "headers are " + headers.size() + " entries"
                  : headerBytes > 300 ? "headers are " + headerBytes + " bytes" : null;
      long before = Stored.eventCount(db);
      List<OutboxEvent> batch =
          List.of(OutboxEvent.of("order", "good-" + round, "order.created", Map.of()), event);
      RuntimeException outcome = inHostTransaction(tx -> small.appendAll(tx, batch));
      String what = "round " + round + ", seed " + SEED;
      if (expected == null) {
        stored++;
        assertThat(outcome).as(what).isNull();
        assertThat(Stored.eventCount(db)).as(what).isEqualTo(before + 2);
      } else {
        refused++;
        assertThat(outcome)
            .as(what)
            .isInstanceOf(InvalidEventException.class)
            .hasMessageStartingWith("events[1] (aggregate order/size-" + round)
            .hasMessageContaining(expected)
            .hasMessageContaining("(Outbox.Builder.max");
        assertThat(Stored.eventCount(db)).as("nothing of the batch: " + what).isEqualTo(before);
      }
    }
    assertThat(stored).as("seed " + SEED).isPositive();
    assertThat(refused).as("seed " + SEED).isPositive();
  }
}

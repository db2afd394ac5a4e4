package dev.pgoutbox.core;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import dev.pgoutbox.testing.TestSchema;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** What goes in comes back out of jsonb unchanged: unicode, nesting, big numbers, java.time. */
class PayloadFidelityIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static DSLContext host;
  private static Outbox outbox;

  /** How a consumer reads payloads back: the outbox's default mapper, exact numbers and offsets. */
  private static final ObjectMapper READER =
      Outbox.defaultObjectMapper()
          .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
          .disable(DeserializationFeature.ADJUST_DATES_TO_CONTEXT_TIME_ZONE);

  /** Numbers are equal when their values are; everything else as JsonNode.equals. */
  private static final Comparator<JsonNode> SAME_NUMBER =
      (a, b) ->
          a.isNumber() && b.isNumber()
              ? a.decimalValue().compareTo(b.decimalValue())
              : (a.equals(b) ? 0 : 1);

  @BeforeAll
  static void setUp() {
    host = DSL.using(db.dataSource(), SQLDialect.POSTGRES);
    outbox = Outbox.builder().schema(db.schema()).build();
  }

  record Text(
      String ascii,
      String emoji,
      String hebrew,
      String arabic,
      String mixedDirection,
      String cjk,
      String combining,
      String escapes,
      String controls,
      String separators,
      Map<String, String> unicodeKeys) {}

  record Numbers(
      long longMax,
      long longMin,
      int intMin,
      BigInteger beyondLong,
      BigDecimal manyDigits,
      BigDecimal keepsScale,
      BigDecimal tiny,
      double oneTenth,
      double large,
      float single) {}

  record Times(
      Instant instant,
      LocalDate date,
      LocalDateTime localDateTime,
      LocalTime time,
      OffsetDateTime offsetDateTime,
      Duration duration) {}

  record Nested(String name, List<Nested> children, Map<String, List<Map<String, Integer>>> deep) {}

  record Everything(Text text, Numbers numbers, Times times, Nested tree) {}

  static Everything everything() {
    Text text =
        new Text(
            "plain",
            "\uD83D\uDE00 \uD83D\uDC69\u200D\uD83D\uDC69\u200D\uD83D\uDC67 \uD83C\uDDEB\uD83C\uDDF7",
            "\u05E9\u05DC\u05D5\u05DD \u05E2\u05D5\u05DC\u05DD",
            "\u0645\u0631\u062D\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
            "order \u202B\u05D4\u05D6\u05DE\u05E0\u05D4\u202C #42",
            "\u6F22\u5B57\u304B\u306A\uD840\uDC0B",
            "e\u0301 vs \u00E9",
            "quote \" backslash \\ slash / tab \t newline \n return \r",
            "\u0001\u0008\u001F\u007F",
            "line\u2028paragraph\u2029",
            Map.of("\u30AD\u30FC", "\u5024", "\uD83D\uDD11", "\uD83D\uDD12"));
    Numbers numbers =
        new Numbers(
            Long.MAX_VALUE,
            Long.MIN_VALUE,
            Integer.MIN_VALUE,
            new BigInteger("123456789012345678901234567890123456789012345678901234567890"),
            new BigDecimal(
                "98765432109876543210987654321098765432109876543210.01234567890123456789012345678901234567890"),
            new BigDecimal("12.500"),
            new BigDecimal("0.000000000000000000000000000001"),
            0.1,
            1.7976931348623157E308,
            3.4028235E38f);
    Times times =
        new Times(
            Instant.parse("2024-02-29T23:59:59.123456789Z"),
            LocalDate.of(1, 1, 1),
            LocalDateTime.of(9999, 12, 31, 23, 59, 59, 999_999_999),
            LocalTime.of(0, 0, 0, 1),
            OffsetDateTime.of(2024, 3, 31, 2, 30, 0, 500, ZoneOffset.ofHoursMinutes(5, 45)),
            Duration.ofDays(400).plusNanos(1));
    Nested tree =
        new Nested(
            "root",
            List.of(
                new Nested("a", List.of(new Nested("a1", List.of(), Map.of())), Map.of()),
                new Nested("b", List.of(), Map.of("k", List.of(Map.of("x", 1), Map.of("y", -2))))),
            Map.of("empty", List.of()));
    return new Everything(text, numbers, times, tree);
  }

  private static String stored(UUID id) {
    return host.fetchSingle(
            "SELECT payload::text FROM " + db.schema() + ".outbox_events WHERE id = ?", id)
        .get(0, String.class);
  }

  @Test
  void unicodeNestingLargeNumbersAndJavaTimeRoundTripUnchanged() throws Exception {
    Everything original = everything();

    UUID id =
        host.transactionResult(
            tx -> outbox.append(tx.dsl(), OutboxEvent.of("x", "1", "t", original)));
    String json = stored(id);

    assertThat(READER.readValue(json, Everything.class)).isEqualTo(original);
    // And as JSON: the tree PostgreSQL returns is the tree Jackson wrote, number for number (jsonb
    // keeps a number's value and scale, not its notation: 1.7976931348623157E+308 comes back
    // written out in full).
    JsonNode written = READER.readTree(READER.writeValueAsString(original));
    assertThat(READER.readTree(json).equals(SAME_NUMBER, written)).isTrue();
    assertThat(json).contains("\"longMax\": 9223372036854775807");
    assertThat(json)
        .contains(
            "\"manyDigits\": 98765432109876543210987654321098765432109876543210."
                + "01234567890123456789012345678901234567890");
  }

  @Test
  void javaTimeIsWrittenAsIsoText() throws Exception {
    Times times = everything().times();
    UUID id =
        host.transactionResult(tx -> outbox.append(tx.dsl(), OutboxEvent.of("x", "1", "t", times)));

    JsonNode stored = READER.readTree(stored(id));
    assertThat(stored.get("instant").asText()).isEqualTo("2024-02-29T23:59:59.123456789Z");
    assertThat(stored.get("offsetDateTime").asText())
        .isEqualTo("2024-03-31T02:30:00.0000005+05:45");
    assertThat(stored.get("date").asText()).isEqualTo("0001-01-01");
    assertThat(stored.get("duration").asText()).isEqualTo("PT9600H0.000000001S");
  }

  @Test
  void jsonNodeAndRawJsonPayloadsAreStoredAsGiven() throws Exception {
    ObjectNode node = JsonNodeFactory.instance.objectNode();
    node.put("big", new BigDecimal("3.14159265358979323846264338327950288419716939937510"));
    node.putArray("list").add("\uD83D\uDE80").add(TextNode.valueOf("x")).addNull();
    String raw = "{\"n\": 1e400, \"s\": \"\\u00e9\\ud83d\\ude00\", \"z\": [true, false, null]}";

    List<UUID> ids =
        host.transactionResult(
            tx ->
                outbox.appendAll(
                    tx.dsl(),
                    List.of(
                        OutboxEvent.of("x", "1", "t", node),
                        OutboxEvent.of("x", "1", "t", RawJson.of(raw)),
                        OutboxEvent.of("x", "1", "t", TextNode.valueOf("just a string")))));

    assertThat(READER.readTree(stored(ids.get(0)))).isEqualTo(node);
    JsonNode rawStored = READER.readTree(stored(ids.get(1)));
    // jsonb keeps the value, not the notation: 1e400 comes back as 1 followed by 400 zeros.
    assertThat(rawStored.get("n").decimalValue()).isEqualByComparingTo(new BigDecimal("1e400"));
    assertThat(rawStored.get("s").asText()).isEqualTo("\u00e9\uD83D\uDE00");
    assertThat(rawStored.get("z").toString()).isEqualTo("[true,false,null]");
    assertThat(stored(ids.get(2))).isEqualTo("\"just a string\"");
  }

  @Test
  void theHostsObjectMapperDecidesTheJson() throws Exception {
    ObjectMapper snake =
        Outbox.defaultObjectMapper().setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE);
    Outbox snakeOutbox = Outbox.builder().schema(db.schema()).objectMapper(snake).build();

    UUID id =
        host.transactionResult(
            tx ->
                snakeOutbox.append(tx.dsl(), OutboxEvent.of("x", "1", "t", everything().times())));

    assertThat(READER.readTree(stored(id)).has("local_date_time")).isTrue();
  }

  @Test
  void unicodeHeaderValuesAndNamesAreStoredExactly() {
    String aggregateId = "\u05D4\u05D6\u05DE\u05E0\u05D4-\uD83D\uDCE6";
    Map<String, String> headers =
        Map.of(
            "traceparent",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "x-note",
            "\u540D \uD83D\uDE00\u0001\"\\");

    UUID id =
        host.transactionResult(
            tx ->
                outbox.append(
                    tx.dsl(),
                    OutboxEvent.builder()
                        .aggregate("\u00E9v\u00E9nement", aggregateId)
                        .eventType("\u521B\u5EFA")
                        .payload(Map.of())
                        .headers(headers)
                        .build()));

    var row =
        Stored.events(db).stream().filter(r -> r.getId().equals(id)).findFirst().orElseThrow();
    assertThat(row.getAggregateType()).isEqualTo("\u00E9v\u00E9nement");
    assertThat(row.getAggregateId()).isEqualTo(aggregateId);
    assertThat(row.getEventType()).isEqualTo("\u521B\u5EFA");
    assertThat(
            READER.convertValue(
                readHeaders(row.getHeaders().data()), new TypeReference<Map<String, String>>() {}))
        .isEqualTo(headers);
  }

  private static JsonNode readHeaders(String json) {
    try {
      return READER.readTree(json);
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }
}

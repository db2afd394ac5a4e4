package dev.pgoutbox.core.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class JsonTest {

  @Test
  void defaultMapperWritesJavaTimeAsIsoText() {
    assertThat(
            Json.serialize(
                Json.defaultMapper(),
                Map.of("at", Instant.parse("2024-01-02T03:04:05Z")),
                "payload"))
        .isEqualTo("{\"at\":\"2024-01-02T03:04:05Z\"}");
  }

  @Test
  void headersAreAJsonObjectOfStrings() {
    Map<String, String> headers = new LinkedHashMap<>();
    headers.put("traceparent", "00-abc-def-01");
    headers.put("q\"uote", "line\nbreak \uD83D\uDE00");
    assertThat(Json.headers(headers))
        .isEqualTo(
            "{\"traceparent\":\"00-abc-def-01\",\"q\\\"uote\":\"line\\nbreak \uD83D\uDE00\"}");
    assertThat(Json.headers(Map.of())).isEqualTo("{}");
  }

  @Test
  void serializationFailureCarriesJacksonsReason() {
    assertThatThrownBy(() -> Json.serialize(Json.defaultMapper(), new Object(), "payload"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith(
            "payload of type java.lang.Object cannot be serialized to JSON: No serializer found for"
                + " class java.lang.Object");
  }

  @Test
  void deepPathsAreNamed() {
    assertThatThrownBy(() -> Json.check("{\"a\":{\"b\":[0,[\"x\",\"\\u0000\"]]}}", "payload"))
        .hasMessageStartingWith("payload string at /a/b/1/1 must not contain U+0000");
  }

  @Test
  void printableEscapesControlsAndCutsLongText() {
    assertThat(Texts.printable("a\u0000b")).isEqualTo("a\\u0000b");
    assertThat(Texts.printable("x".repeat(100))).isEqualTo("x".repeat(80) + "...");
  }
}

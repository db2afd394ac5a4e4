package dev.pgoutbox.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.node.NullNode;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class OutboxEventTest {

  @Test
  void factoryMakesAnEventWithoutIdOrHeaders() {
    OutboxEvent event = OutboxEvent.of("order", "42", "order.created", Map.of("total", 12));

    assertThat(event.id()).isNull();
    assertThat(event.headers()).isEmpty();
    assertThat(event.payload()).isEqualTo(Map.of("total", 12));
  }

  @Test
  void builderSetsEveryComponent() {
    UUID id = UUID.randomUUID();
    OutboxEvent event =
        OutboxEvent.builder()
            .id(id)
            .aggregate("order", "42")
            .eventType("order.shipped")
            .payload(NullNode.getInstance())
            .header("a", "1")
            .headers(Map.of("b", "2"))
            .header("a", "3")
            .build();

    assertThat(event)
        .isEqualTo(
            new OutboxEvent(
                id,
                "order",
                "42",
                "order.shipped",
                NullNode.getInstance(),
                Map.of("a", "3", "b", "2")));
  }

  @Test
  void headersAreCopiedAndUnmodifiable() {
    Map<String, String> headers = new HashMap<>(Map.of("a", "1"));
    OutboxEvent event = new OutboxEvent(null, "order", "1", "t", Map.of(), headers);
    headers.put("b", "2");

    assertThat(event.headers()).containsExactly(Map.entry("a", "1"));
    assertThatThrownBy(() -> event.headers().put("c", "3"))
        .isInstanceOf(UnsupportedOperationException.class);
  }

  @Test
  void withIdAndWithHeaderReturnChangedCopies() {
    OutboxEvent event = OutboxEvent.of("order", "1", "t", Map.of());
    UUID id = UUID.randomUUID();

    assertThat(event.withId(id).id()).isEqualTo(id);
    assertThat(event.withHeader("k", "v").withHeader("k", "w").headers())
        .containsExactly(Map.entry("k", "w"));
    assertThat(event.id()).isNull();
    assertThat(event.headers()).isEmpty();
  }

  @Test
  void lengthsAreCountedInCodePointsAsPostgresqlCountsThem() {
    String hundredEmoji = "\uD83D\uDE80".repeat(100); // 200 UTF-16 chars, 100 characters
    assertThat(OutboxEvent.of("order", hundredEmoji, "t", Map.of()).aggregateId())
        .isEqualTo(hundredEmoji);

    assertThatThrownBy(() -> OutboxEvent.of("order", hundredEmoji + "x", "t", Map.of()))
        .isInstanceOf(InvalidEventException.class)
        .hasMessage("aggregateId must be at most 100 characters, was 101");
  }

  @Test
  void requiredNamesAreCheckedInOrderWithTheirRule() {
    assertThatThrownBy(() -> OutboxEvent.of(null, null, null, Map.of()))
        .hasMessage("aggregateType must not be null");
    assertThatThrownBy(() -> OutboxEvent.of("order", "\t", "t", Map.of()))
        .hasMessage("aggregateId must not be blank");
    assertThatThrownBy(() -> OutboxEvent.of("order", "1", "e".repeat(101), Map.of()))
        .hasMessage("eventType must be at most 100 characters, was 101");
    assertThatThrownBy(() -> OutboxEvent.of("order", "1\u0000", "t", Map.of()))
        .hasMessage(
            "aggregateId must not contain U+0000 (PostgreSQL cannot store it), found at index 1");
    assertThatThrownBy(() -> OutboxEvent.of("order", "1", "t\uDC00", Map.of()))
        .hasMessage(
            "eventType must not contain an unpaired surrogate (not valid UTF-8), found \\udc00 at"
                + " index 1");
    assertThatThrownBy(
            () -> OutboxEvent.builder().aggregate("order", "1").payload(Map.of()).build())
        .isInstanceOf(InvalidEventException.class)
        .hasMessage("eventType must not be null");
  }

  @Test
  void ambiguousPayloadsAreRefusedWithTheWayOut() {
    assertThatThrownBy(() -> OutboxEvent.of("order", "1", "t", "{\"a\":1}"))
        .isInstanceOf(InvalidEventException.class)
        .hasMessage(
            "payload must not be a String, which is ambiguous: wrap JSON text in RawJson.of(text)"
                + " to store it as it is, or pass TextNode.valueOf(text) to store a JSON string");
    assertThatThrownBy(() -> OutboxEvent.of("order", "1", "t", new StringBuilder("x")))
        .hasMessageStartingWith("payload must not be a StringBuilder, which is ambiguous");
    assertThatThrownBy(() -> OutboxEvent.of("order", "1", "t", new byte[] {1}))
        .hasMessageStartingWith("payload must not be a byte[]");
    assertThatThrownBy(() -> OutboxEvent.of("order", "1", "t", null))
        .hasMessage("payload must not be null (use NullNode.getInstance() for a JSON null)");
  }

  @Test
  void badHeadersAreRefusedNamingTheKey() {
    Map<String, String> nullValue = new LinkedHashMap<>();
    nullValue.put("traceparent", null);
    Map<String, String> nullKey = new HashMap<>();
    nullKey.put(null, "v");

    assertThatThrownBy(() -> new OutboxEvent(null, "order", "1", "t", Map.of(), null))
        .hasMessage("headers must not be null (use Map.of() for none)");
    assertThatThrownBy(() -> new OutboxEvent(null, "order", "1", "t", Map.of(), nullValue))
        .hasMessage("headers value of 'traceparent' must not be null");
    assertThatThrownBy(() -> new OutboxEvent(null, "order", "1", "t", Map.of(), nullKey))
        .hasMessage("headers must not contain a null key");
    assertThatThrownBy(
            () -> new OutboxEvent(null, "order", "1", "t", Map.of(), Map.of("k", "a\u0000")))
        .hasMessage(
            "headers value of 'k' must not contain U+0000 (PostgreSQL cannot store it), found at"
                + " index 1");
  }

  @Test
  void headerNamesMustBeTokensEveryBrokerCarriesAndNotAnEnvelopeName() {
    for (String bad : new String[] {"Zürich", "a b", "a:b", "x*", "", "tab\t", "é".repeat(3)}) {
      assertThatThrownBy(() -> OutboxEvent.of("order", "1", "t", Map.of()).withHeader(bad, "v"))
          .as(bad)
          .isInstanceOf(InvalidEventException.class)
          .hasMessageStartingWith("headers key '")
          .hasMessageContaining(bad.isEmpty() ? "must not be empty" : "must be a token");
    }
    assertThatThrownBy(
            () -> OutboxEvent.of("order", "1", "t", Map.of()).withHeader("k".repeat(101), "v"))
        .hasMessageEndingWith("must be at most 100 characters, was 101");
    for (String envelope :
        new String[] {
          "ce_type",
          "CE-ID",
          "content-type",
          "Content-Type",
          "event_type",
          "aggregate_id",
          "Nats-Msg-Id",
          "event_id",
          "webhook-signature",
          "Host",
          "Transfer-Encoding",
          "X-Pgoutbox-Aggregate-Id"
        }) {
      assertThatThrownBy(
              () -> OutboxEvent.of("order", "1", "t", Map.of()).withHeader(envelope, "v"))
          .as(envelope)
          .hasMessage(
              "headers key '"
                  + envelope
                  + "' is a name the publishers write themselves (event_type, aggregate_type,"
                  + " aggregate_id, event_id, Nats-Msg-Id, content-type, ce_*/ce-*, X-Pgoutbox-*,"
                  + " the webhook's and HTTP's own): choose another name");
    }
    // Any value is fine: the publishers encode what their protocol cannot carry.
    assertThat(
            OutboxEvent.of("order", "1", "t", Map.of())
                .withHeader("x-city_1.~!#$%&'+^`|", "Zürich 東京\r\n\"%41\" ")
                .headers())
        .containsEntry("x-city_1.~!#$%&'+^`|", "Zürich 東京\r\n\"%41\" ");
  }
}

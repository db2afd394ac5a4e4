package dev.pgoutbox.core.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgoutbox.core.OutboxException;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class WebhookHeadersTest {

  @Test
  void readsAPlainValueOrDecodesTheExtValueWhateverTheCaseOfTheName() {
    Map<String, List<String>> headers =
        Map.of(
            "X-pgoutbox-event-type",
            List.of("order.created"),
            "X-pgoutbox-aggregate-id*",
            List.of(HeaderValues.extValue("東京-1")),
            "x-city*",
            List.of("utf-8''Z%c3%bcrich"));
    assertThat(WebhookHeaders.get(headers, "X-Pgoutbox-Event-Type")).isEqualTo("order.created");
    assertThat(WebhookHeaders.get(headers, "X-Pgoutbox-Aggregate-Id")).isEqualTo("東京-1");
    assertThat(WebhookHeaders.get(headers, "X-City")).isEqualTo("Zürich");
    assertThat(WebhookHeaders.get(headers, "absent")).isNull();
  }

  @Test
  void everyAwkwardValueRoundTripsThroughTheExtValue() {
    for (String value : HeaderValuesTest.AWKWARD) {
      Map<String, List<String>> sent =
          HeaderValues.isPlain(value)
              ? Map.of("x-v", List.of(value))
              : Map.of("x-v*", List.of(HeaderValues.extValue(value)));
      assertThat(WebhookHeaders.get(sent, "x-v")).as(value).isEqualTo(value);
    }
  }

  @Test
  void aMalformedExtValueIsRefusedNamingTheHeader() {
    assertThatThrownBy(() -> WebhookHeaders.get(Map.of("x-v*", List.of("UTF-8''%E6%9")), "x-v"))
        .isInstanceOf(OutboxException.class)
        .hasMessageStartingWith("webhook header x-v*: ext-value has a malformed percent escape");
    assertThatThrownBy(() -> WebhookHeaders.get(Map.of("x-v*", List.of("latin1''x")), "x-v"))
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("UTF-8");
  }
}

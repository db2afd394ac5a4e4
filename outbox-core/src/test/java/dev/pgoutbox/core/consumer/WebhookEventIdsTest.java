package dev.pgoutbox.core.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgoutbox.core.OutboxException;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class WebhookEventIdsTest {

  @Test
  void readsTheIdempotencyKeyWhateverTheCaseOfTheHeaderName() {
    UUID id = UUID.randomUUID();
    Map<String, List<String>> headers = new TreeMap<>();
    headers.put("idempotency-key", List.of(id.toString()));
    assertThat(WebhookEventIds.eventId(headers)).isEqualTo(id);
  }

  @Test
  void refusesARequestWithoutOrWithAForeignIdempotencyKey() {
    assertThatThrownBy(() -> WebhookEventIds.eventId(Map.of()))
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("no Idempotency-Key header");
    assertThatThrownBy(() -> WebhookEventIds.eventId("abc"))
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("was 'abc'");
  }
}

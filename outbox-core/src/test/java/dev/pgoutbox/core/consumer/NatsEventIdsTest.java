package dev.pgoutbox.core.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgoutbox.core.OutboxException;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsMessage;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class NatsEventIdsTest {

  @Test
  void readsTheEventIdFromNatsMsgId() {
    UUID id = UUID.randomUUID();
    Headers h = new Headers().put(NatsEventIds.HEADER, id.toString());
    assertThat(NatsEventIds.eventId(NatsMessage.builder().subject("s").headers(h).build()))
        .isEqualTo(id);
  }

  @Test
  void refusesAMessageWithoutEventId() {
    assertThatThrownBy(() -> NatsEventIds.eventId(NatsMessage.builder().subject("s.t").build()))
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("s.t has no Nats-Msg-Id");
  }
}

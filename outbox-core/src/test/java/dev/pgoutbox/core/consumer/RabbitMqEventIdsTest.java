package dev.pgoutbox.core.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.AMQP;
import dev.pgoutbox.core.OutboxException;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class RabbitMqEventIdsTest {

  @Test
  void readsTheEventIdFromTheMessageId() {
    UUID id = UUID.randomUUID();
    assertThat(
            RabbitMqEventIds.eventId(
                new AMQP.BasicProperties.Builder().messageId(id.toString()).build()))
        .isEqualTo(id);
  }

  @Test
  void refusesAMessageWithoutOrWithAForeignMessageId() {
    assertThatThrownBy(() -> RabbitMqEventIds.eventId(new AMQP.BasicProperties.Builder().build()))
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("no message-id");
    assertThatThrownBy(
            () ->
                RabbitMqEventIds.eventId(
                    new AMQP.BasicProperties.Builder().messageId("42").build()))
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("must be a UUID, was '42'");
  }
}

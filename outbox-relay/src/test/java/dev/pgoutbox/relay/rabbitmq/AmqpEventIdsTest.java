package dev.pgoutbox.relay.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.AMQP;
import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.relay.brokers.TestEvents;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class AmqpEventIdsTest {

  @Test
  void readsTheEventIdFromTheMessageId() {
    UUID id = UUID.randomUUID();
    assertThat(
            AmqpEventIds.eventId(
                new AMQP.BasicProperties.Builder().messageId(id.toString()).build()))
        .isEqualTo(id);
  }

  @Test
  void refusesAMessageWithoutOrWithAForeignMessageId() {
    assertThatThrownBy(() -> AmqpEventIds.eventId(new AMQP.BasicProperties.Builder().build()))
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("no message-id");
    assertThatThrownBy(
            () -> AmqpEventIds.eventId(new AMQP.BasicProperties.Builder().messageId("42").build()))
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("must be a UUID, was '42'");
  }

  @Test
  void defaultRoutingsUseTheEventTypeOrTheAggregateIdAsRoutingKey() {
    var m = TestEvents.one("order", "a-7", 1, "{}");
    assertThat(AmqpRouting.byEventType("orders").route(m))
        .isEqualTo(new AmqpRoute("orders", "order.step"));
    assertThat(AmqpRouting.byAggregateId("orders").route(m))
        .isEqualTo(new AmqpRoute("orders", "a-7"));
  }
}

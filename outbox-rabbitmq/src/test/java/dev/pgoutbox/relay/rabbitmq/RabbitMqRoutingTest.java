package dev.pgoutbox.relay.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.brokers.TestEvents;
import org.junit.jupiter.api.Test;

class RabbitMqRoutingTest {

  @Test
  void defaultRoutingsUseTheEventTypeOrTheAggregateIdAsRoutingKey() {
    var m = TestEvents.one("order", "a-7", 1, "{}");
    assertThat(RabbitMqRouting.byEventType("orders").route(m))
        .isEqualTo(new RabbitMqRoute("orders", "order.step"));
    assertThat(RabbitMqRouting.byAggregateId("orders").route(m))
        .isEqualTo(new RabbitMqRoute("orders", "a-7"));
  }
}

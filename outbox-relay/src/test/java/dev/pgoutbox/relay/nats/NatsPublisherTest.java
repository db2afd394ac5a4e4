package dev.pgoutbox.relay.nats;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import java.time.Instant;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

class NatsPublisherTest {

  private static OutboxMessage message(String aggregateType, String eventType) {
    return new OutboxMessage(
        UUID.randomUUID(), 1, aggregateType, "a-1", eventType, "{}", Map.of(), 1, Instant.now());
  }

  @Test
  void defaultSubjectIsPrefixAggregateTypeEventType() {
    assertThat(NatsRouting.byTypes("outbox").subject(message("order", "order.created")))
        .isEqualTo("outbox.order.order.created");
  }

  @Test
  void wildcardsAndWhitespaceInTypesCannotWidenTheSubject() {
    assertThat(NatsRouting.byTypes("outbox").subject(message("my order", "*.>")))
        .isEqualTo("outbox.my_order._._");
  }

  @Test
  void refusesAPrefixThatIsNotASubject() {
    assertThatThrownBy(() -> NatsRouting.byTypes("out box"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'out box'");
  }

  @Test
  void anAckTimeoutIsRetryable() {
    assertThat(NatsPublisher.classify(new TimeoutException(), "s.x"))
        .isInstanceOfSatisfying(
            PublishResult.Retryable.class,
            r -> assertThat(r.reason()).contains("s.x").contains("no JetStream ack"));
  }
}

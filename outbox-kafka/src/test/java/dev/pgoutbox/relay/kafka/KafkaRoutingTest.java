package dev.pgoutbox.relay.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.OutboxMessage;
import java.time.Instant;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class KafkaRoutingTest {

  @Test
  void legalAggregateTypesKeepTheirTopic() {
    assertThat(topic("order")).isEqualTo("order");
    assertThat(topic("order_line.v2-x")).isEqualTo("order_line.v2-x");
    assertThat(KafkaRouting.byAggregateType("outbox.").topic(message("order")))
        .isEqualTo("outbox.order");
  }

  @Test
  void everyAggregateTypeTheWriterAcceptsGetsALegalTopic() {
    assertThat(topic("Bestellung Ü")).isEqualTo("Bestellung_20_C3_9C");
    assertThat(topic("東京")).isEqualTo("_E6_9D_B1_E4_BA_AC");
    assertThat(topic("a/b")).isEqualTo("a_2Fb");
    assertThat(KafkaTopics.legal(topic(".."))).isTrue();
    String longest = topic("😀".repeat(100));
    assertThat(longest).hasSize(KafkaTopics.MAX_LENGTH).matches("[A-Za-z0-9._-]+");
    assertThat(topic("😀".repeat(99) + "😁")).isNotEqualTo(longest);
    for (String type : new String[] {" ", "%", "\"q\"", "\r\n", "\u0001", "x".repeat(100)}) {
      assertThat(KafkaTopics.legal(topic(type))).as(type).isTrue();
    }
  }

  private static String topic(String aggregateType) {
    return KafkaRouting.byAggregateType().topic(message(aggregateType));
  }

  private static OutboxMessage message(String aggregateType) {
    return new OutboxMessage(
        UUID.randomUUID(), 1, aggregateType, "a-1", "t", "{}", Map.of(), 1, Instant.now());
  }
}

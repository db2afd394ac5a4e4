package dev.pgoutbox.core.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgoutbox.core.OutboxException;
import java.nio.charset.StandardCharsets;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;

class KafkaEventIdsTest {

  @Test
  void readsTheEventIdBackFromARecord() {
    UUID id = UUID.randomUUID();
    ConsumerRecord<String, byte[]> record =
        new ConsumerRecord<>("order", 3, 42L, "a-1", new byte[0]);
    record.headers().add(KafkaEventIds.HEADER, id.toString().getBytes(StandardCharsets.UTF_8));
    assertThat(KafkaEventIds.eventId(record)).isEqualTo(id);
  }

  @Test
  void aRecordWithoutEventIdIsRefusedWithItsPosition() {
    ConsumerRecord<String, byte[]> record =
        new ConsumerRecord<>("order", 3, 42L, "a-1", new byte[0]);
    assertThatThrownBy(() -> KafkaEventIds.eventId(record))
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("no event_id header")
        .hasMessageContaining("order-3@42");
    record.headers().add(KafkaEventIds.HEADER, "nope".getBytes(StandardCharsets.UTF_8));
    assertThatThrownBy(() -> KafkaEventIds.eventId(record))
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("must be a UUID, was 'nope'");
  }
}

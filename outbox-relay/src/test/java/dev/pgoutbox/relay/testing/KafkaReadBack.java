package dev.pgoutbox.relay.testing;

import dev.pgoutbox.testing.Eventually;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

/** Reading back what a test published to Kafka, the one way the wire tests share. */
public final class KafkaReadBack {

  private KafkaReadBack() {}

  /**
   * A consumer of string keys and byte values in a group of its own ({@code <groupPrefix>-<random
   * UUID>}), reading from the earliest offset; the caller subscribes and closes it.
   */
  public static KafkaConsumer<String, byte[]> consumer(
      String bootstrapServers, String groupPrefix) {
    return new KafkaConsumer<>(
        Map.of(
            ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
            bootstrapServers,
            ConsumerConfig.GROUP_ID_CONFIG,
            groupPrefix + "-" + UUID.randomUUID(),
            ConsumerConfig.AUTO_OFFSET_RESET_CONFIG,
            "earliest"),
        new StringDeserializer(),
        new ByteArrayDeserializer());
  }

  /**
   * Polls {@code consumer} until it has read a record (within a minute, else fails naming {@code
   * what}) and returns the first one read.
   */
  public static ConsumerRecord<String, byte[]> awaitFirst(
      KafkaConsumer<String, byte[]> consumer, String what) {
    List<ConsumerRecord<String, byte[]>> records = new ArrayList<>();
    Eventually.await(
        what,
        Duration.ofMinutes(1),
        () -> {
          consumer.poll(Duration.ofMillis(200)).forEach(records::add);
          return !records.isEmpty();
        });
    return records.get(0);
  }
}

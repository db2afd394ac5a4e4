package dev.pgoutbox.example.chaos;

import dev.pgoutbox.example.infra.EmbeddedKafkaBroker;
import dev.pgoutbox.example.verify.DeliveryChecker;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/** Kafka for the chaos run: an embedded broker; the outage stops it and starts it again. */
final class KafkaChaosBroker implements ChaosBroker {

  static final String TOPIC = "pgoutbox-chaos";
  static final int PARTITIONS = 8;

  private final EmbeddedKafkaBroker kafka;

  private KafkaChaosBroker(EmbeddedKafkaBroker kafka) {
    this.kafka = kafka;
  }

  static KafkaChaosBroker start() throws Exception {
    EmbeddedKafkaBroker kafka = EmbeddedKafkaBroker.start();
    try (Admin admin =
        Admin.create(
            Map.<String, Object>of(
                AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()))) {
      admin.createTopics(List.of(new NewTopic(TOPIC, PARTITIONS, (short) 1))).all().get();
    } catch (Exception e) {
      kafka.close();
      throw e;
    }
    return new KafkaChaosBroker(kafka);
  }

  @Override
  public String describe() {
    return "kafka (embedded, " + kafka.bootstrapServers() + ", topic " + TOPIC + ")";
  }

  @Override
  public List<String> relayArguments() {
    return List.of("--kafka", kafka.bootstrapServers(), "--topic", TOPIC);
  }

  @Override
  public AutoCloseable consume(DeliveryChecker checker) {
    KafkaConsumer<byte[], byte[]> consumer =
        new KafkaConsumer<>(
            Map.<String, Object>of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                kafka.bootstrapServers(),
                ConsumerConfig.CLIENT_ID_CONFIG,
                "pgoutbox-chaos-checker",
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG,
                false,
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG,
                "earliest"),
            new ByteArrayDeserializer(),
            new ByteArrayDeserializer());
    // Assigned, not subscribed: no group, no rebalances; the position lives in this consumer.
    consumer.assign(
        IntStream.range(0, PARTITIONS).mapToObj(p -> new TopicPartition(TOPIC, p)).toList());
    Thread thread =
        Thread.ofPlatform()
            .name("chaos-checker-kafka")
            .start(
                () -> {
                  try {
                    while (!Thread.currentThread().isInterrupted()) {
                      for (ConsumerRecord<byte[], byte[]> record :
                          consumer.poll(Duration.ofMillis(200))) {
                        checker.receive(record.value(), System.currentTimeMillis());
                      }
                    }
                  } catch (WakeupException e) {
                    // close() below
                  } finally {
                    consumer.close(CloseOptions.timeout(Duration.ofSeconds(5)));
                  }
                });
    return () -> {
      consumer.wakeup();
      thread.join();
    };
  }

  @Override
  public String outage() {
    return "Kafka broker stopped";
  }

  @Override
  public void interrupt() {
    kafka.stop();
  }

  @Override
  public void resume() {
    kafka.restart();
  }

  @Override
  public void close() {
    kafka.close();
  }
}

package dev.pgoutbox.tools.chaos;

import dev.pgoutbox.testing.DeliveryChecker;
import dev.pgoutbox.testing.EmbeddedKafka;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.jspecify.annotations.Nullable;

/** Kafka for the chaos run: an embedded broker; the outage stops it and starts it again. */
final class KafkaChaosBroker implements ChaosBroker {

  static final String TOPIC = "pgoutbox-chaos";
  static final int PARTITIONS = 8;

  private final EmbeddedKafka kafka;

  private KafkaChaosBroker(EmbeddedKafka kafka) {
    this.kafka = kafka;
  }

  static KafkaChaosBroker start() throws Exception {
    EmbeddedKafka kafka = EmbeddedKafka.start();
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
  public CheckerFeed consume(DeliveryChecker checker) {
    return new PartitionFeed(checker);
  }

  /**
   * The checker's consumer: assigned every partition (no group, no rebalances; the position lives
   * in this consumer), read from the start. It has read everything when its position reaches each
   * partition's end offset, asked of the broker by an admin client at the verdict; a consumer that
   * throws is a checker error.
   */
  private final class PartitionFeed implements CheckerFeed {

    private final Failure failure = new Failure();
    private final Map<TopicPartition, Long> positions = new ConcurrentHashMap<>();
    private final KafkaConsumer<byte[], byte[]> consumer;
    private final List<TopicPartition> partitions =
        IntStream.range(0, PARTITIONS).mapToObj(p -> new TopicPartition(TOPIC, p)).toList();
    private volatile boolean closing;
    private final Thread thread;

    PartitionFeed(DeliveryChecker checker) {
      consumer =
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
      consumer.assign(partitions);
      thread = Thread.ofPlatform().name("chaos-checker-kafka").start(() -> run(checker));
    }

    private void run(DeliveryChecker checker) {
      try {
        while (!closing) {
          for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
            checker.receive(record.value(), System.currentTimeMillis());
          }
          for (TopicPartition partition : partitions) {
            try {
              positions.put(partition, consumer.position(partition, Duration.ofMillis(100)));
            } catch (org.apache.kafka.common.errors.TimeoutException e) {
              // Not known yet (the broker is away): asked again after the next poll.
            }
          }
        }
      } catch (WakeupException e) {
        if (!closing) {
          failure.set("the checker's Kafka consumer was woken up: " + e);
        }
      } catch (RuntimeException | Error e) {
        failure.set("the checker's Kafka consumer failed: " + e);
      } finally {
        consumer.close(CloseOptions.timeout(Duration.ofSeconds(5)));
      }
    }

    @Override
    public @Nullable String readError(Duration grace) throws InterruptedException {
      String failed = failure.get();
      if (failed != null) {
        return failed;
      }
      if (!thread.isAlive()) {
        return "the checker's Kafka consumer stopped";
      }
      Map<TopicPartition, Long> ends = new HashMap<>();
      try (Admin admin =
          Admin.create(
              Map.<String, Object>of(
                  AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG,
                  kafka.bootstrapServers(),
                  AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG,
                  3_000,
                  AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG,
                  5_000))) {
        admin
            .listOffsets(
                partitions.stream().collect(Collectors.toMap(p -> p, p -> OffsetSpec.latest())))
            .all()
            .get(10, TimeUnit.SECONDS)
            .forEach((partition, info) -> ends.put(partition, info.offset()));
      } catch (ExecutionException | TimeoutException | KafkaException e) {
        return "could not ask Kafka for the end offsets of " + TOPIC + ": " + e;
      }
      if (CheckerFeed.await(() -> failure.get() != null || behind(ends).isEmpty(), grace)) {
        return failure.get();
      }
      return "read " + TOPIC + " short of its end offsets: " + behind(ends);
    }

    /** Partitions whose position is short of {@code ends}, as "p: position/end". */
    private List<String> behind(Map<TopicPartition, Long> ends) {
      return ends.entrySet().stream()
          .filter(e -> positions.getOrDefault(e.getKey(), 0L) < e.getValue())
          .map(
              e ->
                  e.getKey().partition()
                      + ": "
                      + positions.getOrDefault(e.getKey(), 0L)
                      + "/"
                      + e.getValue())
          .sorted()
          .toList();
    }

    @Override
    public boolean failed() {
      return failure.get() != null;
    }

    @Override
    public void close() {
      closing = true;
      consumer.wakeup();
      try {
        thread.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
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

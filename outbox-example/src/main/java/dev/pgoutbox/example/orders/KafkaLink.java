package dev.pgoutbox.example.orders;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.core.consumer.KafkaEventIds;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.kafka.KafkaPublisher;
import dev.pgoutbox.relay.kafka.KafkaRouting;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Order events over Apache Kafka: one topic, key = order id (so an order's events share a partition
 * and keep their order), the event id in the {@code event_id} header, read back with {@link
 * KafkaEventIds}. Shipping consumes with group {@code shipping}, committing offsets after applying.
 */
public final class KafkaLink implements BrokerLink {

  private static final Logger LOG = LoggerFactory.getLogger(KafkaLink.class);

  /** Partitions of the topic when this link creates it. */
  public static final int PARTITIONS = 4;

  private final String bootstrapServers;
  private final String topic;
  private final KafkaPublisher publisher;
  private final Admin admin;

  /**
   * Connects to {@code bootstrapServers}, creates {@code topic} if missing, and builds the relay's
   * publisher with {@code deliveryTimeout} (how long a record may take, retries included).
   */
  public KafkaLink(String bootstrapServers, String topic, Duration deliveryTimeout) {
    this.bootstrapServers = requireNonNull(bootstrapServers, "bootstrapServers");
    this.topic = requireNonNull(topic, "topic");
    this.admin =
        Admin.create(
            Map.of(
                AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG,
                bootstrapServers,
                AdminClientConfig.CLIENT_ID_CONFIG,
                "pgoutbox-example-admin",
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG,
                15_000,
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG,
                5_000));
    createTopic();
    this.publisher =
        KafkaPublisher.builder(bootstrapServers)
            .routing(KafkaRouting.fixed(topic))
            .deliveryTimeout(deliveryTimeout)
            .build();
  }

  /** The topic the order events go to. */
  public String topic() {
    return topic;
  }

  /** The admin client of this link, for operations on the topic (the demo uses it). */
  public Admin admin() {
    return admin;
  }

  @Override
  public String describe() {
    return "Kafka " + bootstrapServers + ", topic " + topic;
  }

  @Override
  public Publisher publisher() {
    return publisher;
  }

  @Override
  public AutoCloseable startConsumer(ShippingService shipping) {
    Map<String, Object> config = new HashMap<>();
    config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
    config.put(ConsumerConfig.GROUP_ID_CONFIG, ShippingService.CONSUMER + "-" + topic);
    config.put(ConsumerConfig.CLIENT_ID_CONFIG, "pgoutbox-example-shipping");
    config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 500);
    // A consumer that could not leave the group (broker down at shutdown) holds its partitions
    // until its session expires: keep that short, so a restarted service resumes within seconds.
    config.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 10_000);
    config.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 3_000);
    KafkaConsumer<String, byte[]> consumer =
        new KafkaConsumer<>(config, new StringDeserializer(), new ByteArrayDeserializer());
    consumer.subscribe(List.of(topic));
    PollLoop loop = new PollLoop(consumer, shipping);
    loop.thread.start();
    return loop;
  }

  @Override
  public Health health() {
    try {
      int nodes = admin.describeCluster().nodes().get(2, TimeUnit.SECONDS).size();
      return new Health(nodes > 0, describe() + ", " + nodes + " broker(s) reachable");
    } catch (ExecutionException | TimeoutException e) {
      return new Health(false, describe() + ": " + e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new Health(false, describe() + ": interrupted");
    }
  }

  @Override
  public void close() {
    publisher.close();
    admin.close(Duration.ofSeconds(5));
  }

  private void createTopic() {
    try {
      admin
          .createTopics(List.of(new NewTopic(topic, Optional.of(PARTITIONS), Optional.empty())))
          .all()
          .get(30, TimeUnit.SECONDS);
      LOG.info("Created Kafka topic {} ({} partitions)", topic, PARTITIONS);
    } catch (ExecutionException e) {
      if (!(e.getCause() instanceof TopicExistsException)) {
        throw new IllegalStateException(
            "Could not create Kafka topic " + topic + " on " + bootstrapServers + ": " + e, e);
      }
    } catch (TimeoutException e) {
      throw new IllegalStateException(
          "Kafka at " + bootstrapServers + " did not answer within 30 s (creating " + topic + ")",
          e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted while creating topic " + topic, e);
    }
  }

  /** A record that can never be applied. */
  private static final class InvalidRecordException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    InvalidRecordException(String message) {
      super(message);
    }
  }

  /** The consumer's poll loop on its own virtual thread. */
  private static final class PollLoop implements AutoCloseable, Runnable {
    private final KafkaConsumer<String, byte[]> consumer;
    private final ShippingService shipping;
    private final Thread thread;
    private volatile boolean running = true;

    PollLoop(KafkaConsumer<String, byte[]> consumer, ShippingService shipping) {
      this.consumer = consumer;
      this.shipping = shipping;
      this.thread = Thread.ofVirtual().name("shipping-kafka-consumer").unstarted(this);
    }

    @Override
    public void run() {
      Duration backoff = Duration.ZERO;
      try {
        while (running) {
          if (!backoff.isZero()) {
            pause(backoff);
          }
          ConsumerRecords<String, byte[]> records = consumer.poll(Duration.ofMillis(200));
          Map<TopicPartition, OffsetAndMetadata> done = new HashMap<>();
          boolean failed = false;
          for (TopicPartition partition : records.partitions()) {
            for (ConsumerRecord<String, byte[]> record : records.records(partition)) {
              if (failed) {
                break;
              }
              String where = record.topic() + "-" + record.partition() + "@" + record.offset();
              try {
                shipping.apply(
                    eventId(record),
                    header(record, KafkaPublisher.EVENT_TYPE_HEADER),
                    payload(record));
                done.put(partition, new OffsetAndMetadata(record.offset() + 1));
              } catch (IllegalArgumentException | InvalidRecordException e) {
                shipping.reject(where, e);
                done.put(partition, new OffsetAndMetadata(record.offset() + 1));
              } catch (RuntimeException e) {
                failed = true;
                LOG.warn("Could not apply record {}, will read it again: {}", where, e.toString());
              }
            }
          }
          if (failed) {
            // Rewind every partition of this poll to its first unapplied record.
            for (TopicPartition partition : records.partitions()) {
              OffsetAndMetadata next = done.get(partition);
              consumer.seek(
                  partition,
                  next != null ? next.offset() : records.records(partition).get(0).offset());
            }
            backoff = backoff.isZero() ? Duration.ofMillis(200) : min(backoff.multipliedBy(2));
          } else {
            backoff = Duration.ZERO;
          }
          if (!done.isEmpty()) {
            try {
              consumer.commitSync(done, Duration.ofSeconds(10));
            } catch (RuntimeException e) {
              if (e instanceof WakeupException) {
                throw e;
              }
              // Applied but not committed: a redelivery, which the inbox ignores.
              LOG.warn("Could not commit shipping offsets: {}", e.toString());
            }
          }
        }
      } catch (WakeupException e) {
        // close() was called.
      } catch (RuntimeException e) {
        LOG.error("Shipping consumer stopped: {}", e.toString(), e);
      } finally {
        consumer.close(CloseOptions.timeout(Duration.ofSeconds(5)));
      }
    }

    @Override
    public void close() {
      running = false;
      consumer.wakeup();
      try {
        thread.join(Duration.ofSeconds(15));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    /** The event id, or {@link InvalidRecordException} for a record pgoutbox did not send. */
    private static UUID eventId(ConsumerRecord<String, byte[]> record) {
      try {
        return KafkaEventIds.eventId(record);
      } catch (OutboxException e) {
        throw new InvalidRecordException(e.getMessage());
      }
    }

    private static String payload(ConsumerRecord<String, byte[]> record) {
      if (record.value() == null) {
        throw new InvalidRecordException("record has no value (a tombstone?)");
      }
      return new String(record.value(), StandardCharsets.UTF_8);
    }

    private static String header(ConsumerRecord<String, byte[]> record, String name) {
      Header header = record.headers().lastHeader(name);
      return header == null ? "" : new String(header.value(), StandardCharsets.UTF_8);
    }

    private static Duration min(Duration d) {
      return d.compareTo(Duration.ofSeconds(5)) > 0 ? Duration.ofSeconds(5) : d;
    }

    private void pause(Duration d) {
      try {
        Thread.sleep(d);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        running = false;
      }
    }
  }
}

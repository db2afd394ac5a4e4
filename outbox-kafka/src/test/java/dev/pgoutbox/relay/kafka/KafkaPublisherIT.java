package dev.pgoutbox.relay.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.core.consumer.KafkaEventIds;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.brokers.Drain;
import dev.pgoutbox.relay.brokers.OrderChecker;
import dev.pgoutbox.relay.brokers.PublisherContract;
import dev.pgoutbox.relay.brokers.TestEvents;
import dev.pgoutbox.testing.EmbeddedKafka;
import dev.pgoutbox.testing.Eventually;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link KafkaPublisher} against a real single-node Kafka started in this JVM: the publisher
 * contract, and what only Kafka does (record size limits of the client, broker and topic).
 */
class KafkaPublisherIT extends PublisherContract {

  static EmbeddedKafka kafka;

  @BeforeAll
  static void startKafka() throws Exception {
    kafka = EmbeddedKafka.start();
  }

  @AfterAll
  static void stopKafka() throws Exception {
    kafka.close();
  }

  /** The topic named after the aggregate type, as the default routing has it. */
  @Override
  protected Destination destination(String aggregateType) {
    kafka.createTopic(aggregateType, 8);
    return new Destination() {
      @Override
      public Publisher publisher() {
        return KafkaPublisher.builder(kafka.bootstrapServers()).build();
      }

      @Override
      public void readBack(OrderChecker checker, int expected) throws Exception {
        consume(kafka.bootstrapServers(), aggregateType, expected, checker);
      }
    };
  }

  /** The embedded broker stopped and restarted; the publisher gives up on a record after 3 s. */
  @Override
  protected Destination destinationWithOutage(String aggregateType) {
    Destination topic = destination(aggregateType);
    return new Destination() {
      @Override
      public Publisher publisher() {
        return KafkaPublisher.builder(kafka.bootstrapServers())
            .deliveryTimeout(Duration.ofSeconds(3))
            .property(ProducerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, 200)
            .build();
      }

      @Override
      public void readBack(OrderChecker checker, int expected) throws Exception {
        topic.readBack(checker, expected);
      }

      @Override
      public void beginOutage() {
        kafka.stop();
      }

      @Override
      public void endOutage() {
        kafka.restart();
      }

      @Override
      public List<String> outageReasons() {
        return List.of("TimeoutException");
      }
    };
  }

  /** A record larger than the client's max.request.size. */
  @Override
  protected Refused refused(Destination to, String aggregateType, String aggregateId) {
    return new Refused(
        TestEvents.one(aggregateType, aggregateId, 1, "\"" + "x".repeat(2 * 1024 * 1024) + "\""),
        List.of("RecordTooLargeException", aggregateType));
  }

  @Test
  void recordTooLargeForTheBrokerIsPermanentAndAHostProducerStaysOpen() throws Exception {
    kafka.createTopic("big-broker", 1);
    OutboxMessage huge =
        TestEvents.one("big-broker", "a-1", 1, "\"" + "x".repeat(3 * 1024 * 1024) + "\"");
    try (KafkaProducer<String, byte[]> producer =
        new KafkaProducer<>(
            Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                kafka.bootstrapServers(),
                ProducerConfig.ACKS_CONFIG,
                "all",
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG,
                true,
                ProducerConfig.MAX_REQUEST_SIZE_CONFIG,
                8 * 1024 * 1024),
            new StringSerializer(),
            new ByteArraySerializer())) {
      try (KafkaPublisher publisher = KafkaPublisher.builder(producer).build()) {
        List<PublishResult> results =
            publisher.publish(List.of(huge)).toCompletableFuture().get(1, TimeUnit.MINUTES);
        assertThat(results.get(0))
            .isInstanceOfSatisfying(
                PublishResult.Permanent.class,
                p -> assertThat(p.reason()).contains("RecordTooLargeException"));
      }
      // Closing the publisher left the host's producer usable.
      producer
          .send(new ProducerRecord<>("big-broker", "k", new byte[] {1}))
          .get(30, TimeUnit.SECONDS);
    }
  }

  @Test
  void recordTooLargeForTheTopicButNotTheClientHoldsBackTheNextEventOfItsAggregate()
      throws Exception {
    String topic = "small-topic";
    try (Admin admin =
        Admin.create(
            Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()))) {
      admin
          .createTopics(
              List.of(
                  new NewTopic(topic, 2, (short) 1)
                      .configs(Map.of(TopicConfig.MAX_MESSAGE_BYTES_CONFIG, "20000"))))
          .all()
          .get(1, TimeUnit.MINUTES);
    }
    // 50 KB: the client (max.request.size 1 MB) lets it go, the topic refuses it. The events
    // behind it would have travelled in later producer batches; they must not be sent at all.
    OutboxMessage tooLarge = TestEvents.one(topic, "a-1", 1, "\"" + "x".repeat(50_000) + "\"");
    OutboxMessage next = TestEvents.one(topic, "a-1", 2, "{\"aggregate\":\"a-1\",\"seq\":2}");
    OutboxMessage other1 = TestEvents.one(topic, "b-1", 1, "{\"aggregate\":\"b-1\",\"seq\":1}");
    OutboxMessage other2 = TestEvents.one(topic, "b-1", 2, "{\"aggregate\":\"b-1\",\"seq\":2}");
    try (KafkaPublisher publisher =
        KafkaPublisher.builder(kafka.bootstrapServers())
            .routing(KafkaRouting.fixed(topic))
            .build()) {
      List<PublishResult> results =
          publisher
              .publish(List.of(tooLarge, next, other1, other2))
              .toCompletableFuture()
              .get(1, TimeUnit.MINUTES);
      assertThat(results.get(0))
          .isInstanceOfSatisfying(
              PublishResult.Permanent.class,
              p -> assertThat(p.reason()).contains("RecordTooLargeException").contains(topic));
      assertThat(results.get(1))
          .isInstanceOfSatisfying(
              PublishResult.Retryable.class,
              r ->
                  assertThat(r.reason())
                      .startsWith("held back")
                      .contains(tooLarge.id().toString()));
      assertThat(results.subList(2, 4)).containsOnly(PublishResult.published());
    }
    // Only b-1's two events are in the topic: a marker written last proves the read is complete.
    try (KafkaProducer<String, byte[]> producer =
        new KafkaProducer<>(
            Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()),
            new StringSerializer(),
            new ByteArraySerializer())) {
      for (int p = 0; p < 2; p++) {
        producer
            .send(new ProducerRecord<>(topic, p, "marker", new byte[] {1}))
            .get(30, TimeUnit.SECONDS);
      }
    }
    List<String> keys = new java.util.ArrayList<>();
    try (KafkaConsumer<String, byte[]> consumer =
        new KafkaConsumer<>(
            Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                kafka.bootstrapServers(),
                ConsumerConfig.GROUP_ID_CONFIG,
                "checker-" + UUID.randomUUID(),
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG,
                "earliest"),
            new StringDeserializer(),
            new ByteArrayDeserializer())) {
      consumer.subscribe(List.of(topic));
      Eventually.await(
          "both markers",
          Duration.ofMinutes(1),
          () -> {
            consumer.poll(Duration.ofMillis(200)).forEach(r -> keys.add(r.key()));
            return keys.stream().filter("marker"::equals).count() == 2;
          });
    }
    assertThat(keys).containsExactlyInAnyOrder("b-1", "b-1", "marker", "marker");
  }

  /**
   * Not an assertion: what one event in flight per aggregate costs, printed for docs/publishers.md.
   * The same 2,000 events as 2,000 aggregates of one event (all in one round trip), as 100
   * aggregates of 20 and as 10 aggregates of 200 (200 round trips).
   */
  @Test
  void printsThroughputAcrossAggregatesAndWithinOne() throws Exception {
    kafka.createTopic("speed", 4);
    for (int linger : new int[] {5, 0}) {
      try (KafkaPublisher publisher =
          KafkaPublisher.builder(kafka.bootstrapServers())
              .property(ProducerConfig.LINGER_MS_CONFIG, linger)
              .build()) {
        new Drain()
            .all(publisher, TestEvents.of("speed", 50, 1, 50).batches(), Duration.ofMinutes(1));
        for (int aggregates : new int[] {2000, 100, 10}) {
          TestEvents events = TestEvents.of("speed", aggregates, 2000 / aggregates, 2000);
          long started = System.nanoTime();
          new Drain().all(publisher, events.batches(), Duration.ofMinutes(5));
          double seconds = (System.nanoTime() - started) / 1e9;
          System.out.printf(
              "kafka linger.ms=%d: one batch of 2000 events over %d aggregate(s): %.2f s, %.0f"
                  + " events/s%n",
              linger, aggregates, seconds, 2000 / seconds);
        }
      }
    }
  }

  static void consume(String bootstrapServers, String topic, int expected, OrderChecker checker)
      throws Exception {
    try (KafkaConsumer<String, byte[]> consumer =
        new KafkaConsumer<>(
            Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                bootstrapServers,
                ConsumerConfig.GROUP_ID_CONFIG,
                "checker-" + UUID.randomUUID(),
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG,
                "earliest",
                ConsumerConfig.MAX_POLL_RECORDS_CONFIG,
                5000),
            new StringDeserializer(),
            new ByteArrayDeserializer())) {
      consumer.subscribe(List.of(topic));
      Eventually.await(
          expected + " events on " + topic + " (have " + checker.distinct() + ")",
          Duration.ofMinutes(2),
          () -> {
            for (ConsumerRecord<String, byte[]> r : consumer.poll(Duration.ofMillis(200))) {
              checker.received(
                  KafkaEventIds.eventId(r),
                  r.key(),
                  new String(r.value(), StandardCharsets.UTF_8),
                  text(r, "traceparent"));
              assertThat(text(r, KafkaPublisher.EVENT_TYPE_HEADER)).isEqualTo(topic + ".step");
              assertThat(text(r, KafkaPublisher.AGGREGATE_TYPE_HEADER)).isEqualTo(topic);
            }
            return checker.distinct() >= expected;
          });
      // Anything else already there (duplicates) is read too before checking.
      for (ConsumerRecord<String, byte[]> r : consumer.poll(Duration.ofMillis(500))) {
        checker.received(
            KafkaEventIds.eventId(r),
            r.key(),
            new String(r.value(), StandardCharsets.UTF_8),
            text(r, "traceparent"));
      }
    }
  }

  private static String text(ConsumerRecord<?, ?> r, String header) {
    Header h = r.headers().lastHeader(header);
    return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
  }
}

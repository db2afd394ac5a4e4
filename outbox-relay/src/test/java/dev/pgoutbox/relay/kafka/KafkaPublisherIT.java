package dev.pgoutbox.relay.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.db.testing.Eventually;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.brokers.Drain;
import dev.pgoutbox.relay.brokers.EmbeddedKafka;
import dev.pgoutbox.relay.brokers.OrderChecker;
import dev.pgoutbox.relay.brokers.TestEvents;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** {@link KafkaPublisher} against a real single-node Kafka started in this JVM. */
class KafkaPublisherIT {

  static EmbeddedKafka kafka;

  @BeforeAll
  static void startKafka() throws Exception {
    kafka = EmbeddedKafka.start();
  }

  @AfterAll
  static void stopKafka() throws Exception {
    kafka.close();
  }

  @Test
  void deliversTenThousandEventsOverAThousandAggregatesInOrderWithIdsAndHeaders() throws Exception {
    kafka.createTopic("order", 8);
    TestEvents events = TestEvents.of("order", 1000, 10, 500);
    try (KafkaPublisher publisher = KafkaPublisher.builder(kafka.bootstrapServers()).build()) {
      Drain drain = new Drain().all(publisher, events.batches(), Duration.ofMinutes(2));
      // Retryable answers are legitimate on a loaded machine (e.g. a request timeout and the
      // producer's retry); what matters is checked below: nothing lost, order intact.
      System.out.println(
          "retryable answers: "
              + drain.retryable()
              + " "
              + drain.reasons().stream().limit(3).toList());
    }
    OrderChecker checker = events.checker();
    consume(kafka.bootstrapServers(), "order", events.size(), checker);
    checker.assertComplete();
  }

  @Test
  void brokerDownAnswersRetryableAndEverythingIsDeliveredAfterItComesBack() throws Exception {
    kafka.createTopic("outage", 4);
    TestEvents events = TestEvents.of("outage", 100, 6, 200);
    List<List<OutboxMessage>> batches = events.batches();
    try (KafkaPublisher publisher =
        KafkaPublisher.builder(kafka.bootstrapServers())
            .deliveryTimeout(Duration.ofSeconds(3))
            .property(ProducerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, 200)
            .build()) {
      new Drain().all(publisher, batches.subList(0, 1), Duration.ofMinutes(1));

      kafka.stop();
      List<PublishResult> whileDown =
          publisher.publish(batches.get(1)).toCompletableFuture().get(1, TimeUnit.MINUTES);
      assertThat(whileDown)
          .hasSize(batches.get(1).size())
          .allSatisfy(
              r ->
                  assertThat(r)
                      .isInstanceOfSatisfying(
                          PublishResult.Retryable.class,
                          rt ->
                              assertThat(rt.reason())
                                  .contains("Kafka topic outage")
                                  .contains("TimeoutException")));

      kafka.restart();
      new Drain().all(publisher, batches.subList(1, batches.size()), Duration.ofMinutes(2));
    }
    OrderChecker checker = events.checker();
    consume(kafka.bootstrapServers(), "outage", events.size(), checker);
    checker.assertComplete();
  }

  @Test
  void recordTooLargeForTheClientIsPermanentAndHoldsBackOnlyItsAggregate() throws Exception {
    kafka.createTopic("big", 2);
    OutboxMessage huge = TestEvents.one("big", "a-1", 1, "\"" + "x".repeat(2 * 1024 * 1024) + "\"");
    OutboxMessage after = TestEvents.one("big", "a-1", 2, "{}");
    OutboxMessage other = TestEvents.one("big", "a-2", 1, "{}");
    try (KafkaPublisher publisher = KafkaPublisher.builder(kafka.bootstrapServers()).build()) {
      List<PublishResult> results =
          publisher
              .publish(List.of(huge, after, other))
              .toCompletableFuture()
              .get(1, TimeUnit.MINUTES);
      assertThat(results.get(0))
          .isInstanceOfSatisfying(
              PublishResult.Permanent.class,
              p -> assertThat(p.reason()).contains("RecordTooLargeException").contains("big"));
      assertThat(results.get(1))
          .isInstanceOfSatisfying(
              PublishResult.Retryable.class,
              r -> assertThat(r.reason()).contains("earlier event " + huge.id()));
      assertThat(results.get(2)).isEqualTo(PublishResult.published());
    }
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

package dev.pgoutbox.relay.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgoutbox.relay.PublishResult;
import java.util.Map;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.errors.NetworkException;
import org.apache.kafka.common.errors.NotEnoughReplicasException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

class KafkaPublisherTest {

  @Test
  void refusesProducerSettingsThatBreakPerAggregateOrderWithIllegalArgumentAtOnce() {
    // Refused by the setter itself, before build(): a refused setting is a bad argument.
    assertThatThrownBy(
            () -> KafkaPublisher.builder("localhost:1").property(ProducerConfig.ACKS_CONFIG, "1"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("acks=1");
    assertThatThrownBy(
            () ->
                KafkaPublisher.builder("localhost:1")
                    .property(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 6))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("max.in.flight.requests.per.connection=6");
    assertThatThrownBy(
            () ->
                KafkaPublisher.builder("localhost:1")
                    .property(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("enable.idempotence=false");
    assertThatThrownBy(
            () ->
                KafkaPublisher.builder("localhost:1")
                    .property(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, "x.Y"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("value.serializer=x.Y");
  }

  @Test
  void refusesProducerPropertiesForAHostsProducerWithIllegalArgument() {
    try (KafkaProducer<String, byte[]> host =
        new KafkaProducer<>(
            Map.<String, Object>of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:1"),
            new StringSerializer(),
            new ByteArraySerializer())) {
      assertThatThrownBy(
              () -> KafkaPublisher.builder(host).property(ProducerConfig.LINGER_MS_CONFIG, 5))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("property(linger.ms, ...) configures a producer this publisher");
    }
  }

  @Test
  void refusesProducerSettingsThatScatterAnAggregateOverPartitionsNamingThem() {
    assertThatThrownBy(
            () ->
                KafkaPublisher.builder("localhost:1")
                    .property(ProducerConfig.PARTITIONER_IGNORE_KEYS_CONFIG, true))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("partitioner.ignore.keys=true");
    assertThatThrownBy(
            () ->
                KafkaPublisher.builder("localhost:1")
                    .property(
                        ProducerConfig.PARTITIONER_CLASS_CONFIG,
                        "org.apache.kafka.clients.producer.RoundRobinPartitioner"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(
            "partitioner.class=org.apache.kafka.clients.producer.RoundRobinPartitioner");
    // Keeping keys is fine.
    KafkaPublisher.builder("localhost:1")
        .property(ProducerConfig.PARTITIONER_IGNORE_KEYS_CONFIG, "false");
  }

  @Test
  void refusesBlankBootstrapServersAndTinyDeliveryTimeouts() {
    assertThatThrownBy(() -> KafkaPublisher.builder(" "))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("bootstrapServers");
    assertThatThrownBy(
            () -> KafkaPublisher.builder("x:1").deliveryTimeout(java.time.Duration.ofMillis(10)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("deliveryTimeout must be at least 1s, was PT0.01S");
  }

  @Test
  void classifiesTooLargeAndUnauthorizedAsPermanentAndOutagesAsRetryable() {
    assertThat(KafkaPublisher.classify(new RecordTooLargeException("too big"), "t"))
        .isInstanceOf(PublishResult.Permanent.class);
    assertThat(KafkaPublisher.classify(new TopicAuthorizationException("denied"), "t"))
        .isInstanceOf(PublishResult.Permanent.class);
    assertThat(KafkaPublisher.classify(new NotEnoughReplicasException("isr"), "t"))
        .isInstanceOf(PublishResult.Retryable.class);
    assertThat(KafkaPublisher.classify(new TimeoutException("expired"), "t"))
        .isInstanceOfSatisfying(
            PublishResult.Retryable.class,
            r -> assertThat(r.reason()).isEqualTo("Kafka topic t: TimeoutException: expired"));
    assertThat(KafkaPublisher.classify(new NetworkException("reset"), "t"))
        .isInstanceOf(PublishResult.Retryable.class);
  }
}

package dev.pgoutbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.ConnectionFactory;
import dev.pgoutbox.relay.kafka.KafkaPublisher;
import dev.pgoutbox.relay.nats.NatsPublisher;
import dev.pgoutbox.relay.rabbitmq.RabbitMqPublisher;
import dev.pgoutbox.relay.rabbitmq.RabbitMqRouting;
import dev.pgoutbox.relay.webhook.WebhookPublisher;
import io.nats.client.Options;
import java.net.URI;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Every publisher builder refuses a bad setting with an {@link IllegalArgumentException} that names
 * it and its bound, from the setter itself (docs/publishers.md says so). Kafka's producer settings
 * and the webhook's have their own tests; these are the rest.
 */
class PublisherBuildersTest {

  @Test
  void rabbitMqRefusesAConfirmTimeoutOutOfBoundsAndStructuredCloudEvents() {
    RabbitMqPublisher.Builder builder =
        RabbitMqPublisher.builder(new ConnectionFactory(), RabbitMqRouting.byEventType("x"));
    assertThatThrownBy(() -> builder.confirmTimeout(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("confirmTimeout must be between 1ms and 10 minutes, was PT0S");
    assertThatThrownBy(() -> builder.confirmTimeout(Duration.ofMinutes(11)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("confirmTimeout must be between 1ms and 10 minutes, was PT11M");
    assertThatThrownBy(() -> builder.cloudEvents(CloudEvents.structured("/s")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith(
            "cloudEvents must be CloudEvents.binary(...) for RabbitMqPublisher");
  }

  @Test
  void natsRefusesAnAckTimeoutOutOfBounds() {
    NatsPublisher.Builder builder =
        NatsPublisher.builder(new Options.Builder().server("nats://127.0.0.1:1").build());
    assertThatThrownBy(() -> builder.ackTimeout(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("ackTimeout must be between 1ms and 10 minutes, was PT0S");
    assertThatThrownBy(() -> builder.ackTimeout(Duration.ofMinutes(11)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("ackTimeout must be between 1ms and 10 minutes, was PT11M");
  }

  @Test
  void kafkaRefusesStructuredCloudEventsAndTheWebhookABadSecret() {
    assertThatThrownBy(
            () -> KafkaPublisher.builder("x:1").cloudEvents(CloudEvents.structured("/s")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("cloudEvents must be CloudEvents.binary(...) for KafkaPublisher");
    assertThatThrownBy(
            () ->
                WebhookPublisher.builder(URI.create("http://x/y"))
                    .standardWebhooksSecret("whsec_dG9vIHNob3J0"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("secret must decode to between 24 and 64 bytes, was 9");
  }

  @Test
  void aPublishedResultCarriesTraceAttributesOfTheTypesSpansHold() {
    PublishResult r = PublishResult.published(Map.of("a", "x", "b", 7, "c", 8L, "d", true));
    assertThat(((PublishResult.Published) r).traceAttributes())
        .isEqualTo(Map.of("a", "x", "b", 7L, "c", 8L, "d", true));
    // What the broker said is for traces: a published result is a published result.
    assertThat(r).isEqualTo(PublishResult.published()).hasSameHashCodeAs(PublishResult.published());
    assertThat(PublishResult.published(Map.of())).isSameAs(PublishResult.published());
    assertThatThrownBy(() -> PublishResult.published(Map.of("p", 1.5)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "traceAttributes value of p must be a String, Long or Boolean, was java.lang.Double");
  }

  @Test
  void theFirstBootstrapServerIsTheSpansServer() {
    assertThat(SpanAttributes.firstServer("kafka-1:9092,kafka-2:9093"))
        .isEqualTo(Map.of("server.address", "kafka-1", "server.port", 9092L));
    assertThat(SpanAttributes.firstServer("SASL_SSL://[::1]:9094"))
        .isEqualTo(Map.of("server.address", "::1", "server.port", 9094L));
    assertThat(SpanAttributes.firstServer("broker")).isEqualTo(Map.of("server.address", "broker"));
    assertThat(SpanAttributes.firstServer("broker:x")).isEmpty();
  }
}

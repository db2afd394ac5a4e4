package dev.pgoutbox.spring.boot;

import dev.pgoutbox.core.consumer.StandardWebhooks;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.kafka.KafkaPublisher;
import dev.pgoutbox.relay.kafka.KafkaRouting;
import dev.pgoutbox.relay.nats.NatsPublisher;
import dev.pgoutbox.relay.nats.NatsRouting;
import dev.pgoutbox.relay.rabbitmq.RabbitMqPublisher;
import dev.pgoutbox.relay.rabbitmq.RabbitMqRouting;
import dev.pgoutbox.relay.webhook.WebhookPublisher;
import dev.pgoutbox.spring.boot.PgOutboxProperties.PublisherType;
import io.nats.client.Options;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.jspecify.annotations.Nullable;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.kafka.core.ProducerFactory;

/**
 * The publishers {@code pgoutbox.publisher.type} builds, one configuration per type, each only when
 * its broker client is on the classpath, the relay is enabled, and the application declares no
 * {@link Publisher} of its own. A type whose client is missing is reported by the relay at start
 * ({@link #noPublisher}).
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnBooleanProperty(name = "pgoutbox.relay.enabled", matchIfMissing = true)
@Import({
  PublisherConfigurations.KafkaPublisherConfiguration.class,
  PublisherConfigurations.BootKafkaProducerConfiguration.class,
  PublisherConfigurations.RabbitMqPublisherConfiguration.class,
  PublisherConfigurations.NatsPublisherConfiguration.class,
  PublisherConfigurations.WebhookPublisherConfiguration.class
})
final class PublisherConfigurations {

  private static final String TYPE = "pgoutbox.publisher.type";

  /** Why no publisher exists, and what to do about it. */
  static String noPublisher(@Nullable PublisherType type) {
    if (type == null) {
      return "pgoutbox: the relay is enabled (pgoutbox.relay.enabled) but there is no Publisher:"
          + " declare a Publisher bean, set pgoutbox.publisher.type (kafka, rabbitmq, nats,"
          + " webhook), or set pgoutbox.relay.enabled=false in applications that only append";
    }
    String missing =
        switch (type) {
          case KAFKA -> "dev.pgoutbox:pgoutbox-kafka";
          case RABBITMQ ->
              "dev.pgoutbox:pgoutbox-rabbitmq and spring-boot-starter-amqp (the publisher uses"
                  + " Boot's RabbitMQ connection)";
          case NATS -> "dev.pgoutbox:pgoutbox-nats";
          case WEBHOOK -> "dev.pgoutbox:pgoutbox-webhook";
        };
    return "pgoutbox: "
        + TYPE
        + "="
        + type.name().toLowerCase(Locale.ROOT)
        + " but no such publisher could be built: it needs "
        + missing;
  }

  /** Boot's own producer configuration, when spring-boot-kafka built a producer factory. */
  record BootKafkaProducerConfig(Map<String, Object> properties) {}

  /** Reads the producer configuration of Boot's {@code ProducerFactory} (spring.kafka.*). */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.kafka.core.ProducerFactory")
  @ConditionalOnProperty(name = TYPE, havingValue = "kafka")
  static class BootKafkaProducerConfiguration {

    @Bean
    @ConditionalOnBean(ProducerFactory.class)
    BootKafkaProducerConfig pgoutboxBootKafkaProducerConfig(
        ObjectProvider<ProducerFactory<?, ?>> factories) {
      ProducerFactory<?, ?> factory = factories.getIfUnique();
      return new BootKafkaProducerConfig(
          factory == null ? Map.of() : factory.getConfigurationProperties());
    }
  }

  /**
   * {@code type=kafka}: Boot's producer configuration (when spring-boot-kafka is there), then
   * {@code pgoutbox.publisher.kafka.*}, then the publisher's own ordering settings.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(
      name = {
        "org.apache.kafka.clients.producer.KafkaProducer",
        "dev.pgoutbox.relay.kafka.KafkaPublisher"
      })
  @ConditionalOnProperty(name = TYPE, havingValue = "kafka")
  static class KafkaPublisherConfiguration {

    @Bean
    @ConditionalOnMissingBean(Publisher.class)
    KafkaPublisher pgoutboxKafkaPublisher(
        PgOutboxProperties properties, ObjectProvider<BootKafkaProducerConfig> boot) {
      PgOutboxProperties.Kafka kafka = properties.getPublisher().getKafka();
      Map<String, Object> config = new LinkedHashMap<>();
      BootKafkaProducerConfig bootConfig = boot.getIfAvailable();
      if (bootConfig != null) {
        config.putAll(bootConfig.properties());
      }
      // The publisher brings its own serializers; a client id shared with the application's
      // producer would clash in JMX.
      config.remove(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG);
      config.remove(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG);
      config.remove(ProducerConfig.CLIENT_ID_CONFIG);
      config.putAll(kafka.getProperties());
      Object bootServers = config.remove(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG);
      String servers =
          kafka.getBootstrapServers().isEmpty()
              ? serverList(bootServers)
              : String.join(",", kafka.getBootstrapServers());
      if (servers.isBlank()) {
        throw new IllegalStateException(
            TYPE
                + "=kafka needs pgoutbox.publisher.kafka.bootstrap-servers (or spring-boot-kafka"
                + " with spring.kafka.bootstrap-servers)");
      }
      if (kafka.getTopic() != null && !kafka.getTopicPrefix().isEmpty()) {
        throw new IllegalStateException(
            "Set pgoutbox.publisher.kafka.topic or pgoutbox.publisher.kafka.topic-prefix, not"
                + " both");
      }
      KafkaRouting routing =
          kafka.getTopic() != null
              ? KafkaRouting.fixed(kafka.getTopic())
              : kafka.getTopicPrefix().isEmpty()
                  ? KafkaRouting.byAggregateType()
                  : KafkaRouting.byAggregateType(kafka.getTopicPrefix());
      try {
        KafkaPublisher.Builder builder =
            KafkaPublisher.builder(servers)
                .routing(routing)
                .deliveryTimeout(kafka.getDeliveryTimeout());
        config.forEach(builder::property);
        return builder.build();
      } catch (IllegalArgumentException | IllegalStateException e) {
        throw new IllegalStateException(
            "Invalid Kafka producer settings (spring.kafka.producer.*,"
                + " pgoutbox.publisher.kafka.properties.*): "
                + e.getMessage(),
            e);
      }
    }

    private static String serverList(@Nullable Object servers) {
      if (servers instanceof Collection<?> list) {
        return list.stream().map(String::valueOf).collect(Collectors.joining(","));
      }
      return servers == null ? "" : servers.toString();
    }
  }

  /** {@code type=rabbitmq}: on the connection Boot configured (spring.rabbitmq.*). */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(
      name = {
        "com.rabbitmq.client.ConnectionFactory",
        "org.springframework.amqp.rabbit.connection.CachingConnectionFactory",
        "dev.pgoutbox.relay.rabbitmq.RabbitMqPublisher"
      })
  @ConditionalOnProperty(name = TYPE, havingValue = "rabbitmq")
  static class RabbitMqPublisherConfiguration {

    @Bean
    @ConditionalOnMissingBean(Publisher.class)
    @ConditionalOnBean(CachingConnectionFactory.class)
    RabbitMqPublisher pgoutboxRabbitMqPublisher(
        CachingConnectionFactory connections, PgOutboxProperties properties) {
      PgOutboxProperties.RabbitMq rabbit = properties.getPublisher().getRabbitmq();
      String exchange = rabbit.getExchange();
      if (exchange == null || exchange.isBlank()) {
        throw new IllegalStateException(
            TYPE + "=rabbitmq needs pgoutbox.publisher.rabbitmq.exchange");
      }
      RabbitMqRouting routing =
          rabbit.getRoutingKey() == PgOutboxProperties.RabbitMqRoutingKey.AGGREGATE_ID
              ? RabbitMqRouting.byAggregateId(exchange)
              : RabbitMqRouting.byEventType(exchange);
      return RabbitMqPublisher.builder(connections.getRabbitConnectionFactory(), routing)
          .confirmTimeout(rabbit.getConfirmTimeout())
          .build();
    }
  }

  /** {@code type=nats}: a connection of the publisher's own, reconnecting forever. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = {"io.nats.client.Options", "dev.pgoutbox.relay.nats.NatsPublisher"})
  @ConditionalOnProperty(name = TYPE, havingValue = "nats")
  static class NatsPublisherConfiguration {

    @Bean
    @ConditionalOnMissingBean(Publisher.class)
    NatsPublisher pgoutboxNatsPublisher(PgOutboxProperties properties) {
      PgOutboxProperties.Nats nats = properties.getPublisher().getNats();
      if (nats.getServers().isEmpty()) {
        throw new IllegalStateException(
            TYPE + "=nats needs pgoutbox.publisher.nats.servers (e.g. nats://localhost:4222)");
      }
      if ((nats.getUsername() == null) != (nats.getPassword() == null)) {
        throw new IllegalStateException(
            "Set both pgoutbox.publisher.nats.username and pgoutbox.publisher.nats.password, or"
                + " neither");
      }
      Options.Builder options = new Options.Builder();
      try {
        options.servers(nats.getServers().toArray(String[]::new));
      } catch (IllegalArgumentException e) {
        throw new IllegalStateException(
            "Invalid pgoutbox.publisher.nats.servers " + nats.getServers() + ": " + e.getMessage(),
            e);
      }
      options
          .connectionName("pgoutbox-relay-" + properties.getRelay().getName())
          .connectionTimeout(nats.getConnectionTimeout())
          .maxReconnects(-1);
      if (nats.getUsername() != null && nats.getPassword() != null) {
        options.userInfo(nats.getUsername(), nats.getPassword());
      }
      if (nats.getToken() != null) {
        options.token(nats.getToken().toCharArray());
      }
      return NatsPublisher.builder(options.build())
          .routing(NatsRouting.byTypes(nats.getSubjectPrefix()))
          .ackTimeout(nats.getAckTimeout())
          .build();
    }
  }

  /** {@code type=webhook}: every event POSTed to one URL. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "dev.pgoutbox.relay.webhook.WebhookPublisher")
  @ConditionalOnProperty(name = TYPE, havingValue = "webhook")
  static class WebhookPublisherConfiguration {

    @Bean
    @ConditionalOnMissingBean(Publisher.class)
    WebhookPublisher pgoutboxWebhookPublisher(PgOutboxProperties properties) {
      PgOutboxProperties.Webhook webhook = properties.getPublisher().getWebhook();
      URI url = webhook.getUrl();
      if (url == null) {
        throw new IllegalStateException(
            TYPE + "=webhook needs pgoutbox.publisher.webhook.url (an absolute http(s) URL)");
      }
      WebhookPublisher.Builder builder =
          WebhookPublisher.builder(url)
              .requestTimeout(webhook.getRequestTimeout())
              .maxConcurrency(webhook.getMaxConcurrency());
      String secret = webhook.getSigningSecret();
      if (secret != null) {
        // The prefix is required here: a secret of the older X-Pgoutbox-Signature (any text) is
        // refused at start rather than taken for a key the receiver does not know. Neither
        // message shows the value.
        if (!secret.startsWith(StandardWebhooks.SECRET_PREFIX)) {
          throw new IllegalStateException(
              "pgoutbox.publisher.webhook.signing-secret must be a Standard Webhooks secret, "
                  + StandardWebhooks.SECRET_PREFIX
                  + " followed by the base64 of 24 to 64 bytes; a secret for the deprecated"
                  + " X-Pgoutbox-Signature goes in pgoutbox.publisher.webhook.legacy-signing-secret");
        }
        try {
          builder.standardWebhooksSecret(secret);
        } catch (IllegalArgumentException e) {
          throw new IllegalStateException(
              "pgoutbox.publisher.webhook.signing-secret: " + e.getMessage(), e);
        }
      }
      String legacy = webhook.getLegacySigningSecret();
      if (legacy != null) {
        legacySignature(builder, legacy);
      }
      return builder.build();
    }

    @SuppressWarnings("deprecation") // X-Pgoutbox-Signature, opted into by its property
    private static void legacySignature(WebhookPublisher.Builder builder, String secret) {
      builder.signingSecret(secret.getBytes(StandardCharsets.UTF_8));
    }
  }
}

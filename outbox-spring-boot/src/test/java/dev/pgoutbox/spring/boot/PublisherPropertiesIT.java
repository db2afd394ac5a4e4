package dev.pgoutbox.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.TestSchema;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.amqp.autoconfigure.RabbitAutoConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * {@code pgoutbox.publisher.*} refused at start-up with the property's name when a value is bad or
 * missing, or a broker client is absent; a Publisher bean of the application wins over them all. On
 * the real PostgreSQL (the starter migrates its schema before it builds the publisher).
 */
class PublisherPropertiesIT {

  @RegisterExtension static final TestSchema db = TestSchema.empty();

  private ApplicationContextRunner runner() {
    return new ApplicationContextRunner()
        .withConfiguration(
            AutoConfigurations.of(
                DataSourceAutoConfiguration.class,
                RabbitAutoConfiguration.class,
                KafkaAutoConfiguration.class,
                PgOutboxAutoConfiguration.class))
        .withPropertyValues(
            "spring.datasource.url=" + db.jdbcUrl(),
            "spring.datasource.hikari.maximum-pool-size=2",
            "pgoutbox.schema=" + db.schema(),
            "pgoutbox.relay.name=boot-properties");
  }

  private void failsNaming(String message, String... properties) {
    failsNaming(new String[] {message}, properties);
  }

  private void failsNaming(String[] messages, String... properties) {
    runner()
        .withPropertyValues(properties)
        .run(
            context -> {
              assertThat(context).hasFailed();
              for (String message : messages) {
                assertThat(context.getStartupFailure()).hasStackTraceContaining(message);
              }
            });
  }

  @Test
  void rabbitMqWithoutExchangeNamesTheExchangeProperty() {
    failsNaming(
        "pgoutbox.publisher.type=rabbitmq needs pgoutbox.publisher.rabbitmq.exchange",
        "pgoutbox.publisher.type=rabbitmq");
  }

  @Test
  void webhookWithoutUrlNamesTheUrlProperty() {
    failsNaming(
        "pgoutbox.publisher.type=webhook needs pgoutbox.publisher.webhook.url",
        "pgoutbox.publisher.type=webhook");
  }

  @Test
  void webhookWithRelativeUrlFailsBindingTheUrl() {
    failsNaming(
        new String[] {
          "Failed to bind properties under 'pgoutbox.publisher.webhook'",
          "Unable to set value for property url",
          "endpoint must be an absolute http or https URL, was /events"
        },
        "pgoutbox.publisher.type=webhook",
        "pgoutbox.publisher.webhook.url=/events");
  }

  @Test
  void webhookSigningSecretOfTheOlderKindIsRefusedAtStartWithoutShowingIt() {
    runner()
        .withPropertyValues(
            "pgoutbox.publisher.type=webhook",
            "pgoutbox.publisher.webhook.url=http://127.0.0.1:9/events",
            "pgoutbox.publisher.webhook.signing-secret=an-old-body-only-s3cret")
        .run(
            context -> {
              assertThat(context).hasFailed();
              assertThat(context.getStartupFailure())
                  .hasStackTraceContaining(
                      "pgoutbox.publisher.webhook.signing-secret must be a Standard Webhooks secret")
                  .hasStackTraceContaining("pgoutbox.publisher.webhook.legacy-signing-secret");
              java.io.StringWriter trace = new java.io.StringWriter();
              context.getStartupFailure().printStackTrace(new java.io.PrintWriter(trace));
              assertThat(trace.toString()).doesNotContain("an-old-body-only-s3cret");
            });
  }

  @Test
  void unknownTypeFailsBindingTheType() {
    failsNaming(
        "Failed to bind properties under 'pgoutbox.publisher.type'",
        "pgoutbox.publisher.type=carrier-pigeon");
  }

  @Test
  void natsSubjectPrefixWithWildcardFailsBindingThePrefix() {
    failsNaming(
        new String[] {
          "Failed to bind properties under 'pgoutbox.publisher.nats'",
          "Unable to set value for property subject-prefix",
          "prefix must be a literal NATS subject without wildcards or whitespace"
        },
        "pgoutbox.publisher.type=nats",
        "pgoutbox.publisher.nats.subject-prefix=outbox.>");
  }

  @Test
  void natsWithoutItsModuleSaysWhichDependencyIsMissing() {
    runner()
        .withClassLoader(new FilteredClassLoader("dev.pgoutbox.relay.nats"))
        .withPropertyValues("pgoutbox.publisher.type=nats")
        .run(
            context -> {
              assertThat(context).hasFailed();
              assertThat(context.getStartupFailure())
                  .hasStackTraceContaining(
                      "pgoutbox.publisher.type=nats but no such publisher could be built: it"
                          + " needs dev.pgoutbox:pgoutbox-nats");
            });
  }

  @Test
  void natsWithoutItsClientSaysWhichDependencyIsMissing() {
    runner()
        .withClassLoader(new FilteredClassLoader("io.nats"))
        .withPropertyValues("pgoutbox.publisher.type=nats")
        .run(
            context -> {
              assertThat(context).hasFailed();
              assertThat(context.getStartupFailure())
                  .hasStackTraceContaining(
                      "pgoutbox.publisher.type=nats but no such publisher could be built: it"
                          + " needs dev.pgoutbox:pgoutbox-nats");
            });
  }

  @Test
  void kafkaTopicAndTopicPrefixTogetherAreRefused() {
    failsNaming(
        "Set pgoutbox.publisher.kafka.topic or pgoutbox.publisher.kafka.topic-prefix, not both",
        "pgoutbox.publisher.type=kafka",
        "pgoutbox.publisher.kafka.topic=events",
        "pgoutbox.publisher.kafka.topic-prefix=outbox.");
  }

  @Test
  void kafkaWithoutSpringBootKafkaNeedsItsOwnBootstrapServers() {
    runner()
        .withClassLoader(
            new FilteredClassLoader("org.springframework.kafka", "org.springframework.boot.kafka"))
        .withPropertyValues("pgoutbox.publisher.type=kafka")
        .run(
            context -> {
              assertThat(context).hasFailed();
              assertThat(context.getStartupFailure())
                  .hasStackTraceContaining(
                      "pgoutbox.publisher.type=kafka needs"
                          + " pgoutbox.publisher.kafka.bootstrap-servers");
            });
  }

  @Test
  void bootsKafkaProducerSettingsAreReadAndThoseBreakingOrderRefused() {
    failsNaming(
        "Invalid Kafka producer settings (spring.kafka.producer.*,"
            + " pgoutbox.publisher.kafka.properties.*): Kafka producer property acks=1 is not"
            + " allowed",
        "pgoutbox.publisher.type=kafka",
        "spring.kafka.producer.acks=1");
  }

  @Configuration(proxyBeanMethods = false)
  static class HostPublisher {
    @Bean
    RecordingPublisher hostPublisher() {
      return new RecordingPublisher();
    }
  }

  @Test
  void theApplicationsPublisherBeanWinsOverTheType() {
    runner()
        .withUserConfiguration(HostPublisher.class)
        .withPropertyValues("pgoutbox.publisher.type=webhook")
        .run(
            context -> {
              assertThat(context).hasNotFailed();
              assertThat(context).getBean(Publisher.class).isInstanceOf(RecordingPublisher.class);
            });
  }

  @Test
  void aDisabledRelayBuildsNoPublisher() {
    runner()
        .withPropertyValues("pgoutbox.publisher.type=webhook", "pgoutbox.relay.enabled=false")
        .run(
            context -> {
              assertThat(context).hasNotFailed();
              assertThat(context).doesNotHaveBean(Publisher.class);
            });
  }
}

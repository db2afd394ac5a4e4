package dev.pgoutbox.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.kafka.KafkaPublisher;
import dev.pgoutbox.relay.nats.NatsPublisher;
import dev.pgoutbox.relay.rabbitmq.RabbitMqPublisher;
import dev.pgoutbox.relay.webhook.WebhookPublisher;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class PgOutboxPropertiesTest {

  @Test
  void defaultsAreTheLibrarysDefaults() {
    PgOutboxProperties properties = new PgOutboxProperties();
    RelayConfig bound = properties.getRelay().toRelayConfig();
    RelayConfig library = RelayConfig.ofDefaults();
    assertThat(bound.toString()).isEqualTo(library.toString());
    assertThat(bound.listenForNotifications()).isEqualTo(library.listenForNotifications());
    assertThat(bound.errorBackoffMax()).isEqualTo(library.errorBackoffMax());
    assertThat(bound.metricsRefreshInterval()).isEqualTo(library.metricsRefreshInterval());
    assertThat(properties.getSchema()).isEqualTo(OutboxSchema.DEFAULT_SCHEMA);
    assertThat(properties.getRelay().getShutdownTimeout())
        .isEqualTo(OutboxRelay.DEFAULT_STOP_TIMEOUT);
    PgOutboxProperties.Backoff backoff = properties.getRelay().getBackoff();
    assertThat(backoff.getInitial()).isEqualTo(RelayConfig.DEFAULT_BACKOFF_INITIAL);
    assertThat(backoff.getMultiplier()).isEqualTo(RelayConfig.DEFAULT_BACKOFF_MULTIPLIER);
    assertThat(backoff.getJitter()).isEqualTo(RelayConfig.DEFAULT_BACKOFF_JITTER);
    assertThat(backoff.getMax()).isEqualTo(RelayConfig.DEFAULT_BACKOFF_MAX);
    assertThat(properties.getWriter().isSerializeWritersPerAggregate())
        .isEqualTo(Outbox.builder().build().serializesWritersPerAggregate());
    Outbox outbox = Outbox.builder().build();
    assertThat(properties.getWriter().getMaxPayloadBytes()).isEqualTo(outbox.maxPayloadBytes());
    assertThat(properties.getWriter().getMaxHeaders()).isEqualTo(outbox.maxHeaders());
    assertThat(properties.getWriter().getMaxHeaderBytes()).isEqualTo(outbox.maxHeaderBytes());
    PgOutboxProperties.Publisher publisher = properties.getPublisher();
    assertThat(publisher.getKafka().getDeliveryTimeout())
        .isEqualTo(KafkaPublisher.DEFAULT_DELIVERY_TIMEOUT);
    assertThat(publisher.getRabbitmq().getConfirmTimeout())
        .isEqualTo(RabbitMqPublisher.DEFAULT_CONFIRM_TIMEOUT);
    assertThat(publisher.getNats().getAckTimeout()).isEqualTo(NatsPublisher.DEFAULT_ACK_TIMEOUT);
    assertThat(publisher.getWebhook().getRequestTimeout())
        .isEqualTo(WebhookPublisher.DEFAULT_REQUEST_TIMEOUT);
    assertThat(publisher.getWebhook().getMaxConcurrency())
        .isEqualTo(WebhookPublisher.DEFAULT_MAX_CONCURRENCY);
  }

  @Test
  void theConsoleIsOffReadOnlyAndHidesPayloadsByDefaultAndRefusesABadPathOrRole() {
    PgOutboxProperties.Console console = new PgOutboxProperties().getConsole();
    assertThat(console.isEnabled()).isFalse();
    assertThat(console.isWritesEnabled()).isFalse();
    assertThat(console.isShowPayloads()).isFalse();
    assertThat(console.getPath()).isEqualTo("/pgoutbox");
    assertThat(console.getWriteRole()).isEqualTo("OUTBOX_ADMIN");
    console.setPath("/ops/outbox");
    assertThat(console.getPath()).isEqualTo("/ops/outbox");
    for (String bad : new String[] {"pgoutbox", "/pgoutbox/", "/", "/a/../b", "/a b", "/a/*"}) {
      assertThatThrownBy(() -> console.setPath(bad))
          .as(bad)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("pgoutbox.console.path must be a path like /pgoutbox");
    }
    assertThatThrownBy(() -> console.setWriteRole("ROLE_ADMIN"))
        .hasMessageContaining("pgoutbox.console.write-role must be a role name without the ROLE_");
  }

  @Test
  void configurationMetadataIsGeneratedWithDefaults() throws Exception {
    try (InputStream in =
        getClass().getResourceAsStream("/META-INF/spring-configuration-metadata.json")) {
      assertThat(in).isNotNull();
      String json = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      assertThat(json)
          .contains("\"pgoutbox.relay.batch-size\"")
          .contains("\"pgoutbox.relay.backoff.multiplier\"")
          .contains("\"pgoutbox.writer.serialize-writers-per-aggregate\"")
          .contains("\"pgoutbox.publisher.rabbitmq.exchange\"")
          .contains("\"pgoutbox.publisher.kafka.topic-prefix\"")
          .contains("\"pgoutbox.publisher.nats.subject-prefix\"")
          .contains("\"pgoutbox.publisher.webhook.url\"")
          .contains("\"pgoutbox.relay.tracing.enabled\"")
          .contains("\"pgoutbox.relay.tracing.link-to-stored-context\"")
          .contains("\"defaultValue\": \"1s\"");
    }
  }

  @Test
  void docsListEveryPropertyOfTheMetadataAndNoOther() throws Exception {
    Set<String> generated = new TreeSet<>();
    try (InputStream in =
        getClass().getResourceAsStream("/META-INF/spring-configuration-metadata.json")) {
      assertThat(in).isNotNull();
      new ObjectMapper()
          .readTree(in)
          .get("properties")
          .forEach(p -> generated.add(p.get("name").asText()));
      generated.removeIf(name -> !name.startsWith("pgoutbox.")); // Also the endpoint's management.*
    }
    Set<String> documented = new TreeSet<>();
    Matcher row =
        Pattern.compile("(?m)^\\| `(pgoutbox\\.[a-z0-9.-]+)` \\|")
            .matcher(Files.readString(Path.of("../docs/spring-boot-properties.md")));
    while (row.find()) {
      documented.add(row.group(1));
    }
    assertThat(documented).as("properties in docs/spring-boot-properties.md").isEqualTo(generated);
  }
}

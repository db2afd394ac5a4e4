package dev.pgoutbox.docs.snippets;

import com.rabbitmq.client.ConnectionFactory;
import com.sun.net.httpserver.HttpExchange;
import dev.pgoutbox.core.Inbox;
import dev.pgoutbox.core.consumer.KafkaEventIds;
import dev.pgoutbox.core.consumer.StandardWebhooks;
import dev.pgoutbox.core.consumer.WebhookEventIds;
import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.kafka.KafkaPublisher;
import dev.pgoutbox.relay.kafka.KafkaRouting;
import dev.pgoutbox.relay.nats.NatsPublisher;
import dev.pgoutbox.relay.nats.NatsRouting;
import dev.pgoutbox.relay.rabbitmq.RabbitMqPublisher;
import dev.pgoutbox.relay.rabbitmq.RabbitMqRouting;
import dev.pgoutbox.relay.webhook.WebhookPublisher;
import io.nats.client.Options;
import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jooq.DSLContext;

/** docs/publishers.md. */
final class PublishersSnippets {

  private PublishersSnippets() {}

  static void consumer(Inbox inbox, DSLContext tx, ConsumerRecord<String, byte[]> record) {
    // snippet:start kafka-consumer
    inbox.handleOnce(tx, "billing", KafkaEventIds.eventId(record), () -> bill(record));
    // snippet:end kafka-consumer
  }

  static void kafka() {
    // snippet:start kafka
    try (KafkaPublisher kafka =
        KafkaPublisher.builder("kafka-1:9092,kafka-2:9092")
            .routing(KafkaRouting.byAggregateType("outbox.")) // default: byAggregateType()
            .deliveryTimeout(Duration.ofSeconds(30)) // default 30 s
            .property("compression.type", "zstd") // any other producer setting
            .build()) {
      OutboxRelay.builder().publisher(kafka); // ... and the rest of the relay's settings
    }
    // snippet:end kafka
  }

  static void rabbitMq(com.rabbitmq.client.Connection connection) {
    // snippet:start rabbitmq
    ConnectionFactory factory = new ConnectionFactory();
    factory.setHost("rabbit.internal");
    try (RabbitMqPublisher rabbit =
        RabbitMqPublisher.builder(factory, RabbitMqRouting.byEventType("orders"))
            .confirmTimeout(Duration.ofSeconds(30)) // default 30 s
            .build()) {
      OutboxRelay.builder().publisher(rabbit); // ... and the rest of the relay's settings
    }
    // or on your own connection (the publisher opens, and closes, only its channel):
    RabbitMqPublisher.builder(connection, RabbitMqRouting.byAggregateId("orders.sharded")).build();
    // snippet:end rabbitmq
  }

  static void nats() {
    // snippet:start nats
    Options options =
        new Options.Builder().server("nats://nats.internal:4222").maxReconnects(-1).build();
    try (NatsPublisher nats =
        NatsPublisher.builder(options) // or NatsPublisher.builder(connection)
            .routing(NatsRouting.byTypes("outbox")) // the default
            .ackTimeout(Duration.ofSeconds(10)) // default 10 s
            .build()) {
      OutboxRelay.builder().publisher(nats); // ... and the rest of the relay's settings
    }
    // snippet:end nats
  }

  static void webhook() {
    // snippet:start webhook
    try (WebhookPublisher hooks =
        WebhookPublisher.builder(URI.create("https://billing.example.com/events"))
            .standardWebhooksSecret("whsec_...") // Standard Webhooks signature (the one to use)
            .maxConcurrency(16) // requests in flight per batch, default 16
            .requestTimeout(Duration.ofSeconds(10)) // whole exchange, default 10 s
            .build()) {
      OutboxRelay.builder().publisher(hooks); // ... and the rest of the relay's settings
    }
    // per event:
    WebhookPublisher.builder(m -> URI.create("https://hooks.example.com/" + m.eventType()));
    // snippet:end webhook
  }

  static void verify(HttpExchange exchange, String currentSecret, String previousSecret)
      throws IOException {
    // snippet:start verify-webhook
    StandardWebhooks.Verifier verifier =
        StandardWebhooks.verifier(List.of(currentSecret, previousSecret));
    byte[] body = exchange.getRequestBody().readAllBytes();
    if (!verifier.isValid(exchange.getRequestHeaders(), body)) {
      exchange.sendResponseHeaders(401, -1); // forged, tampered or replayed
      return;
    }
    UUID eventId = WebhookEventIds.eventId(exchange.getRequestHeaders()); // the signed id
    // snippet:end verify-webhook
    handle(eventId, body);
  }

  private static void bill(ConsumerRecord<String, byte[]> record) {}

  private static void handle(UUID eventId, byte[] body) {}
}

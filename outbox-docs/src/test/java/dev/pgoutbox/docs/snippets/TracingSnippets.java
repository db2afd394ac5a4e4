package dev.pgoutbox.docs.snippets;

import dev.pgoutbox.core.Inbox;
import dev.pgoutbox.core.consumer.KafkaEventIds;
import dev.pgoutbox.core.consumer.KafkaTraceContext;
import dev.pgoutbox.relay.CloudEvents;
import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.kafka.KafkaPublisher;
import dev.pgoutbox.relay.micrometer.ObservationTracing;
import dev.pgoutbox.relay.otel.OpenTelemetryTracing;
import dev.pgoutbox.relay.webhook.WebhookPublisher;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.tracing.Tracer;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.context.Scope;
import java.net.URI;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jooq.DSLContext;

/** docs/tracing.md. */
final class TracingSnippets {

  private TracingSnippets() {}

  static OutboxRelay openTelemetry(
      DataSource dataSource, Publisher kafkaPublisher, OpenTelemetry openTelemetry) {
    // snippet:start otel-relay
    OutboxRelay relay =
        OutboxRelay.builder()
            .dataSource(dataSource)
            .publisher(kafkaPublisher)
            .tracing(OpenTelemetryTracing.create(openTelemetry)) // dev.pgoutbox.relay.otel
            .build();
    // snippet:end otel-relay
    return relay;
  }

  static OutboxRelay observation(
      DataSource dataSource,
      Publisher rabbitPublisher,
      ObservationRegistry observationRegistry,
      Tracer tracer) {
    // snippet:start observation-relay
    OutboxRelay relay =
        OutboxRelay.builder()
            .dataSource(dataSource)
            .publisher(rabbitPublisher)
            .tracing(ObservationTracing.builder(observationRegistry).tracer(tracer).build())
            .build();
    // snippet:end observation-relay
    return relay;
  }

  @SuppressWarnings("try") // the scope is what makes the span current
  static void consumer(
      io.opentelemetry.api.trace.Tracer tracer,
      ConsumerRecord<String, byte[]> record,
      Inbox inbox,
      DSLContext tx) {
    // snippet:start consumer-span
    Span span =
        tracer
            .spanBuilder("process orders")
            .setSpanKind(SpanKind.CONSUMER)
            .setParent(KafkaTraceContext.extract(record))
            .startSpan();
    try (Scope scope = span.makeCurrent()) {
      inbox.handleOnce(tx, "billing", KafkaEventIds.eventId(record), () -> bill(record));
    } finally {
      span.end();
    }
    // snippet:end consumer-span
  }

  static void cloudEvents(String servers, URI endpoint) {
    // snippet:start cloudevents
    KafkaPublisher.builder(servers).cloudEvents(CloudEvents.binary("/orders-service")).build();
    WebhookPublisher.builder(endpoint)
        .cloudEvents(CloudEvents.structured("/orders-service"))
        .build();
    // snippet:end cloudevents
  }

  static void standardWebhooks(URI endpoint) {
    // snippet:start standard-webhooks
    WebhookPublisher.builder(endpoint)
        .standardWebhooksSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        .build();
    // snippet:end standard-webhooks
  }

  private static void bill(ConsumerRecord<String, byte[]> record) {}
}

package dev.pgoutbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.core.consumer.StandardWebhooks;
import dev.pgoutbox.core.consumer.WebhookCloudEvents;
import dev.pgoutbox.core.consumer.WebhookEventIds;
import dev.pgoutbox.relay.micrometer.ObservationTracing;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.TestSchema;
import io.micrometer.observation.tck.TestObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistryAssert;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * OpenTelemetry and micrometer-tracing are optional: the writer, the relay, the webhook receiver's
 * helpers and the Micrometer Observation bridge load and work without them. The build runs this
 * test twice: as usual, and with every {@code io.opentelemetry} jar and micrometer-tracing off the
 * class path (execution {@code without-opentelemetry} of the failsafe plugin, which sets {@code
 * pgoutbox.test.opentelemetry=absent}). micrometer-observation stays: the relay names it only in
 * {@code ObservationTracing}, which a host without it cannot create anyway.
 */
class WithoutOpenTelemetryIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static final boolean ABSENT =
      "absent".equals(System.getProperty("pgoutbox.test.opentelemetry"));

  @Test
  void writerAndRelayWorkWhetherOrNotOpenTelemetryIsOnTheClassPath() throws Exception {
    if (ABSENT) {
      assertThatThrownBy(() -> Class.forName("io.opentelemetry.api.trace.Span"))
          .isInstanceOf(ClassNotFoundException.class);
    } else {
      assertThat(Class.forName("io.opentelemetry.api.trace.Span")).isNotNull();
    }
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    assertThat(outbox.toString()).contains(ABSENT ? "traceContext=off" : "traceContext=W3C");
    UUID id =
        db.dsl()
            .transactionResult(
                tx ->
                    outbox.append(
                        tx.dsl(),
                        OutboxEvent.of("order", "42", "order.created", Map.of("id", 42))
                            .withHeader("correlation-id", "c-1")));

    List<OutboxMessage> published = new CopyOnWriteArrayList<>();
    CountDownLatch delivered = new CountDownLatch(1);
    Publisher publisher =
        batch -> {
          published.addAll(batch);
          batch.forEach(m -> delivered.countDown());
          return CompletableFuture.completedFuture(
              Collections.nCopies(batch.size(), PublishResult.published()));
        };
    try (OutboxRelay relay =
        OutboxRelay.builder()
            .name("without-otel")
            .dataSource(db.dataSource())
            .schema(db.schema())
            .publisher(publisher)
            .config(RelayConfig.builder().pollInterval(Duration.ofMillis(50)).build())
            .build()) {
      relay.start();
      assertThat(delivered.await(30, TimeUnit.SECONDS)).as("the event was published").isTrue();
    }
    assertThat(published).extracting(OutboxMessage::id).containsExactly(id);
    // No span was current and no tracing is set: the headers are exactly the event's own.
    assertThat(published.get(0).headers()).isEqualTo(Map.of("correlation-id", "c-1"));
  }

  @Test
  void theObservationBridgeNeedsNeitherMicrometerTracingNorOpenTelemetry() throws Exception {
    if (ABSENT) {
      assertThatThrownBy(() -> Class.forName("io.micrometer.tracing.Tracer"))
          .isInstanceOf(ClassNotFoundException.class);
    }
    // What Spring does with a bean's class: every declared member's type resolves.
    assertThat(ObservationTracing.class.getDeclaredMethods()).isNotEmpty();
    assertThat(ObservationTracing.class.getDeclaredFields()).isNotEmpty();
    String traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    UUID id =
        db.dsl()
            .transactionResult(
                tx ->
                    outbox.append(
                        tx.dsl(),
                        OutboxEvent.of("order", "observed", "order.created", Map.of("id", 7))
                            .withHeader("traceparent", traceparent)));
    TestObservationRegistry registry = TestObservationRegistry.create();
    RecordingPublisher publisher = new RecordingPublisher();
    OutboxRelay.builder()
        .name("without-micrometer-tracing")
        .dataSource(db.dataSource())
        .schema(db.schema())
        .publisher(publisher)
        .tracing(ObservationTracing.create(registry))
        .build()
        .runOnce();
    assertThat(publisher.delivered()).extracting(OutboxMessage::id).contains(id);
    assertThat(publisher.delivered())
        .filteredOn(m -> m.id().equals(id))
        .singleElement()
        .extracting(OutboxMessage::headers)
        .isEqualTo(Map.of("traceparent", traceparent));
    TestObservationRegistryAssert.assertThat(registry)
        .hasObservationWithNameEqualTo("pgoutbox.publish")
        .that()
        .hasHighCardinalityKeyValue("messaging.message.id", id.toString())
        .hasLowCardinalityKeyValue("pgoutbox.outcome", "published");
  }

  @Test
  void webhookReceiverHelpersNeedNoOpenTelemetry() {
    byte[] body = "{\"id\":42}".getBytes(StandardCharsets.UTF_8);
    String id = UUID.randomUUID().toString();
    String secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    long now = System.currentTimeMillis() / 1000;
    Map<String, List<String>> headers =
        Map.of(
            "Idempotency-Key", List.of(id),
            "webhook-id", List.of(id),
            "webhook-timestamp", List.of(Long.toString(now)),
            "webhook-signature", List.of(StandardWebhooks.sign(secret, id, now, body)),
            "ce-specversion", List.of("1.0"),
            "ce-id", List.of(id),
            "ce-source", List.of("/orders"),
            "ce-type", List.of("order.created"));
    StandardWebhooks.verifier(List.of(secret)).verify(headers, body);
    assertThat(WebhookEventIds.eventId(headers)).hasToString(id);
    assertThat(WebhookCloudEvents.read(headers, body).eventId()).hasToString(id);
  }
}

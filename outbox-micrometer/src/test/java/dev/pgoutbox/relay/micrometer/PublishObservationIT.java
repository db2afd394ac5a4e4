package dev.pgoutbox.relay.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.PublishTracing;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.TestSchema;
import io.micrometer.common.KeyValues;
import io.micrometer.observation.GlobalObservationConvention;
import io.micrometer.observation.Observation;
import io.micrometer.observation.tck.TestObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistryAssert;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The relay's observations as Micrometer's {@link TestObservationRegistry} sees them: one per event
 * handed to the publisher, its name, contextual name and key values for every fate, the error
 * recorded on a failure, and the conventions a host renames them with. No tracing handler is
 * registered, so nothing may change the headers the writer stored.
 */
class PublishObservationIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  static final String TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  TestObservationRegistry registry;
  Outbox outbox;

  @BeforeEach
  void reset() {
    db.execute("truncate outbox_events");
    // Metrics need every observation of a name to carry the same tag keys: checked on each stop.
    registry =
        TestObservationRegistry.builder()
            .validateObservationsWithTheSameNameHavingTheSameSetOfLowCardinalityKeys(true)
            .build();
    outbox = Outbox.builder().schema(db.schema()).build();
  }

  @Test
  void oneObservationPerEventWithTheKeyValuesOfItsFate() throws Exception {
    UUID ok = write("ok");
    UUID flaky = write("flaky");
    UUID bad = write("bad");
    RecordingPublisher publisher =
        new RecordingPublisher()
            .decide(
                m ->
                    switch (m.aggregateId()) {
                      case "flaky" -> PublishResult.retryable("broker busy");
                      case "bad" -> PublishResult.permanent("no such queue");
                      default -> PublishResult.published();
                    });
    relay(publisher, ObservationTracing.create(registry)).runOnce();

    TestObservationRegistryAssert.assertThat(registry)
        .hasNumberOfObservationsWithNameEqualTo("pgoutbox.publish", 3)
        .forAllObservationsWithNameEqualTo(
            "pgoutbox.publish",
            o ->
                o.hasContextualNameEqualTo("send")
                    .hasLowCardinalityKeyValue("messaging.system", "pgoutbox")
                    .hasLowCardinalityKeyValue("messaging.destination.name", "unknown")
                    .hasLowCardinalityKeyValue("messaging.operation.type", "send")
                    .hasHighCardinalityKeyValue("pgoutbox.attempt", "1")
                    .hasHighCardinalityKeyValue("pgoutbox.batch.size", "3")
                    .hasHighCardinalityKeyValue("pgoutbox.event.type", "order.created")
                    .hasHighCardinalityKeyValue("pgoutbox.aggregate.type", "order"));

    PublishObservationContext published = contextOf(ok);
    assertThat(published.getLowCardinalityKeyValue("pgoutbox.outcome").getValue())
        .isEqualTo("published");
    assertThat(published.getLowCardinalityKeyValue("error.type").getValue()).isEqualTo("none");
    assertThat(published.getHighCardinalityKeyValue("messaging.message.id").getValue())
        .isEqualTo(ok.toString());
    assertThat(published.getError()).isNull();

    PublishObservationContext retried = contextOf(flaky);
    assertThat(retried.getLowCardinalityKeyValue("pgoutbox.outcome").getValue()).isEqualTo("retry");
    assertThat(retried.getLowCardinalityKeyValue("error.type").getValue()).isEqualTo("retryable");
    assertThat(retried.getHighCardinalityKeyValue("pgoutbox.retry_in_ms")).isNotNull();
    assertThat(retried.getError())
        .isInstanceOf(PublishFailedException.class)
        .hasMessageContaining("broker busy");

    PublishObservationContext dead = contextOf(bad);
    assertThat(dead.getLowCardinalityKeyValue("pgoutbox.outcome").getValue())
        .isEqualTo("dead_lettered");
    assertThat(dead.getLowCardinalityKeyValue("error.type").getValue()).isEqualTo("permanent");
    assertThat(dead.getError()).hasMessageContaining("no such queue");
    assertThat(((PublishFailedException) dead.getError()).outcome().fate())
        .isEqualTo(PublishTracing.Fate.DEAD_LETTERED);

    // No tracing handler wrote anything: the publisher got the stored context as it was.
    assertThat(publisher.batches())
        .flatExtracting(batch -> batch)
        .extracting(OutboxMessage::headers)
        .containsOnly(Map.of("traceparent", TRACEPARENT));
  }

  @Test
  void whatThePublisherSaysBeforeAndAfterTheSendIsOnTheObservation() throws Exception {
    UUID ok = write("ok");
    RecordingPublisher recording =
        new RecordingPublisher()
            .decide(
                m -> PublishResult.published(Map.of("messaging.destination.partition.id", "3")));
    Publisher publisher =
        new Publisher() {
          @Override
          public java.util.concurrent.CompletionStage<List<PublishResult>> publish(
              List<OutboxMessage> batch) {
            return recording.publish(batch);
          }

          @Override
          public Map<String, Object> traceAttributes(OutboxMessage message) {
            return Map.of("server.address", "broker-1", "server.port", 9092L);
          }
        };
    OutboxRelay.builder()
        .name("observation-it")
        .dataSource(db.dataSource())
        .schema(db.schema())
        .publisher(publisher)
        .tracing(ObservationTracing.create(registry))
        .config(RelayConfig.builder().batchSize(10).build())
        .build()
        .runOnce();

    PublishObservationContext published = contextOf(ok);
    assertThat(published.getHighCardinalityKeyValue("server.address").getValue())
        .isEqualTo("broker-1");
    assertThat(published.getHighCardinalityKeyValue("server.port").getValue()).isEqualTo("9092");
    assertThat(
            published.getHighCardinalityKeyValue("messaging.destination.partition.id").getValue())
        .isEqualTo("3");
  }

  @Test
  void theNextAttemptIsAnObservationWithTheNextAttemptNumber() throws Exception {
    UUID flaky = write("flaky");
    RecordingPublisher publisher =
        new RecordingPublisher().decide(m -> PublishResult.retryable("broker busy", Duration.ZERO));
    OutboxRelay relay = relay(publisher, ObservationTracing.create(registry));
    relay.runOnce();
    publisher.decide(m -> PublishResult.published());
    db.execute("update outbox_events set retry_after = null");
    relay.runOnce();

    List<PublishObservationContext> attempts =
        contexts().stream().filter(c -> c.message().id().equals(flaky)).toList();
    assertThat(attempts)
        .extracting(c -> c.getHighCardinalityKeyValue("pgoutbox.attempt").getValue())
        .containsExactly("1", "2");
    assertThat(attempts)
        .extracting(c -> c.getLowCardinalityKeyValue("pgoutbox.outcome").getValue())
        .containsExactly("retry", "published");
  }

  @Test
  void aConventionGivenToTheBuilderRenamesTheObservationAndItsKeys() throws Exception {
    write("ok");
    PublishObservationConvention renamed =
        new DefaultPublishObservationConvention() {
          @Override
          public String getName() {
            return "orders.outbox.send";
          }

          @Override
          public KeyValues getLowCardinalityKeyValues(PublishObservationContext context) {
            return super.getLowCardinalityKeyValues(context).and("team", "orders");
          }
        };
    relay(
            new RecordingPublisher(),
            ObservationTracing.builder(registry).observationConvention(renamed).build())
        .runOnce();
    TestObservationRegistryAssert.assertThat(registry)
        .hasSingleObservationThat()
        .hasNameEqualTo("orders.outbox.send")
        .hasLowCardinalityKeyValue("team", "orders")
        .hasLowCardinalityKeyValue("pgoutbox.outcome", "published");
  }

  @Test
  void aGlobalConventionOfTheRegistryWinsOverTheDefault() throws Exception {
    write("ok");
    registry.observationConfig().observationConvention(new Global());
    relay(new RecordingPublisher(), ObservationTracing.create(registry)).runOnce();
    TestObservationRegistryAssert.assertThat(registry)
        .hasSingleObservationThat()
        .hasNameEqualTo("host.publish")
        .hasContextualNameEqualTo("host send");
  }

  @Test
  void aRegistryPredicateThatDeclinesLeavesTheBatchUntraced() throws Exception {
    write("ok");
    registry.observationConfig().observationPredicate((name, context) -> false);
    RecordingPublisher publisher = new RecordingPublisher();
    relay(publisher, ObservationTracing.create(registry)).runOnce();
    TestObservationRegistryAssert.assertThat(registry).doesNotHaveAnyObservation();
    assertThat(publisher.delivered())
        .singleElement()
        .extracting(OutboxMessage::headers)
        .isEqualTo(Map.of("traceparent", TRACEPARENT));
  }

  /** A host's global convention for pgoutbox's context. */
  static final class Global
      implements PublishObservationConvention,
          GlobalObservationConvention<PublishObservationContext> {

    @Override
    public boolean supportsContext(Observation.Context context) {
      return context instanceof PublishObservationContext;
    }

    @Override
    public String getName() {
      return "host.publish";
    }

    @Override
    public String getContextualName(PublishObservationContext context) {
      return "host send";
    }
  }

  private PublishObservationContext contextOf(UUID id) {
    return contexts().stream().filter(c -> c.message().id().equals(id)).findFirst().orElseThrow();
  }

  /** The contexts the registry handled, in order. */
  private List<PublishObservationContext> contexts() {
    List<PublishObservationContext> contexts = new ArrayList<>();
    TestObservationRegistryAssert.assertThat(registry)
        .hasHandledContextsThatSatisfy(
            all -> all.forEach(c -> contexts.add((PublishObservationContext) c)));
    return contexts;
  }

  private UUID write(String aggregateId) {
    return db.dsl()
        .transactionResult(
            tx ->
                outbox.append(
                    tx.dsl(),
                    OutboxEvent.of("order", aggregateId, "order.created", Map.of("id", 1))
                        .withHeader("traceparent", TRACEPARENT)));
  }

  private OutboxRelay relay(RecordingPublisher publisher, PublishTracing tracing) {
    return OutboxRelay.builder()
        .name("observation-it")
        .dataSource(db.dataSource())
        .schema(db.schema())
        .publisher(publisher)
        .tracing(tracing)
        .config(RelayConfig.builder().batchSize(10).build())
        .build();
  }
}

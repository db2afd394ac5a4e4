package dev.pgoutbox.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A strict claim is bounded three ways besides the batch size: the aggregate heads it asks for
 * (about as many as the last claims found: one after a quiet spell), the events it reads behind
 * each head (fewer when the last claims found many heads), and none at all behind the heads when it
 * asks for a batch's worth of heads. A short batch cut by any of them has left events pending that
 * no notification will announce again: the relay must claim again at once. It used to wait for the
 * next notification or poll, so the last events written before a pause waited a whole poll interval
 * (seen as a 1 s maximum in {@code bench latency}). The poll interval here is an hour.
 */
class HeadLimitedClaimIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private final RecordingPublisher publisher = new RecordingPublisher();
  private OutboxRelay relay;

  private final Outbox outbox = Outbox.builder().schema(db.schema()).build();

  @BeforeEach
  void empty() {
    db.execute("truncate outbox_events");
  }

  @AfterEach
  void stop() {
    relay.stop(Duration.ofSeconds(5));
  }

  /** A relay that never polls: only a notification or the relay itself starts a claim. */
  private void startRelay(int batchSize) {
    relay =
        OutboxRelay.builder()
            .name("head-limited")
            .dataSource(db.dataSource())
            .schema(db.schema())
            .publisher(publisher)
            .config(
                RelayConfig.builder()
                    .batchSize(batchSize)
                    .pollInterval(Duration.ofHours(1))
                    .build())
            .build();
    relay.start();
  }

  @Test
  void oneNotificationForManyAggregatesPublishesThemAllWithoutAPoll() {
    startRelay(RelayConfig.DEFAULT_BATCH_SIZE);
    // One aggregate alone first: the claim finds one head, and asks for one next time.
    db.dsl().transaction(tx -> outbox.append(tx.dsl(), event("first")));
    Eventually.await("the first event published", () -> publisher.delivered().size() == 1);

    List<OutboxEvent> many = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      many.add(event("agg-" + i));
    }
    db.dsl().transaction(tx -> outbox.appendAll(tx.dsl(), many));

    Eventually.await(
        "all twenty published on one notification", () -> publisher.delivered().size() == 21);
    assertThat(publisher.delivered())
        .extracting(OutboxMessage::aggregateId)
        .doesNotHaveDuplicates();
  }

  @Test
  void aRunLongerThanTheClaimReadsBehindItsHeadIsPublishedWithoutAPoll() {
    startRelay(RelayConfig.DEFAULT_BATCH_SIZE);
    // Two hundred aggregates at once: the next claims read few events behind each head.
    List<OutboxEvent> spread = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      spread.add(event("agg-" + i));
    }
    db.dsl().transaction(tx -> outbox.appendAll(tx.dsl(), spread));
    Eventually.await("the two hundred published", () -> publisher.delivered().size() == 200);

    List<OutboxEvent> hot = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      hot.add(event("hot"));
    }
    db.dsl().transaction(tx -> outbox.appendAll(tx.dsl(), hot));

    Eventually.await(
        "all fifty of the hot aggregate published on one notification",
        () -> publisher.delivered().size() == 250);
  }

  @Test
  void eventsBehindTheHeadsOfAHeadsOnlyClaimArePublishedWithoutAPoll() {
    // A batch of five asks for five heads: a heads-only claim, one event per aggregate.
    startRelay(5);
    db.dsl()
        .transaction(tx -> outbox.appendAll(tx.dsl(), List.of(event("a"), event("a"), event("a"))));

    Eventually.await(
        "all three published on one notification", () -> publisher.delivered().size() == 3);
  }

  private static OutboxEvent event(String aggregate) {
    return OutboxEvent.of("order", aggregate, "order.created", Map.of("id", aggregate));
  }
}

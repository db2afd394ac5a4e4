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
 * A strict claim asks for about as many aggregate heads as the last claim found, so after a quiet
 * spell it asks for one. When one notification announces events of many aggregates, a claim that
 * found as many heads as it asked for must not be taken for "nothing more pending": the relay
 * claims again at once. It used to wait for the next notification or poll, so the last events
 * written before a pause waited a whole poll interval (seen as a 1 s maximum in {@code bench
 * latency}).
 */
class HeadLimitedClaimIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private final RecordingPublisher publisher = new RecordingPublisher();
  private OutboxRelay relay;

  @BeforeEach
  void startRelayThatNeverPolls() {
    db.execute("truncate outbox_events");
    relay =
        OutboxRelay.builder()
            .name("head-limited")
            .dataSource(db.dataSource())
            .schema(db.schema())
            .publisher(publisher)
            // Only a notification or the relay itself may start a claim within the test.
            .config(RelayConfig.builder().pollInterval(Duration.ofHours(1)).build())
            .build();
    relay.start();
  }

  @AfterEach
  void stop() {
    relay.stop(Duration.ofSeconds(5));
  }

  @Test
  void oneNotificationForManyAggregatesPublishesThemAllWithoutAPoll() {
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
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

  private static OutboxEvent event(String aggregate) {
    return OutboxEvent.of("order", aggregate, "order.created", Map.of("id", aggregate));
  }
}

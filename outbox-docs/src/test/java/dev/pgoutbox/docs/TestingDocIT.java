package dev.pgoutbox.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.DeliveryChecker;
import dev.pgoutbox.testing.TestSchema;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

// snippet:start test-class
/** Tests of outbox code on a migrated schema of their own, with a recording publisher. */
class TestingDocIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  final Outbox outbox = Outbox.builder().schema(db.schema()).build();
  final RecordingPublisher publisher = new RecordingPublisher();
  final OutboxRelay relay =
      OutboxRelay.builder()
          .dataSource(db.dataSource())
          .schema(db.schema())
          .publisher(publisher)
          .build();

  @BeforeEach
  void emptyOutbox() {
    db.execute("truncate outbox_events");
  }

  @Test
  void theRelayPublishesAnAggregatesEventsInOrder() throws Exception {
    db.dsl()
        .transaction(
            tx -> {
              for (int seq = 1; seq <= 3; seq++) {
                Map<String, Object> payload = Map.of("aggregate", "o-1", "seq", seq);
                outbox.append(tx.dsl(), OutboxEvent.of("order", "o-1", "order.step", payload));
              }
            });

    relay.runOnce(); // one batch on this thread: claim, publish, mark, commit

    DeliveryChecker.Verdict verdict =
        DeliveryChecker.check(Map.of("o-1", 3), publisher.deliveredPayloads());
    assertThat(verdict.lost()).isZero();
    assertThat(verdict.reordered()).isZero();
    assertThat(db.queryLong("select count(*) from outbox_events where processed_at is null"))
        .isZero();
  }

  @Test
  void aFailingEventHoldsBackTheRestOfItsAggregate() throws Exception {
    publisher.decide(
        m ->
            m.aggregateId().equals("o-2")
                ? PublishResult.retryable("broker says no")
                : PublishResult.published());
    db.dsl()
        .transaction(
            tx -> {
              outbox.append(tx.dsl(), OutboxEvent.of("order", "o-2", "order.step", Map.of()));
              outbox.append(tx.dsl(), OutboxEvent.of("order", "o-2", "order.step", Map.of()));
              outbox.append(tx.dsl(), OutboxEvent.of("order", "o-3", "order.step", Map.of()));
            });

    relay.runOnce();

    assertThat(publisher.delivered()).extracting(m -> m.aggregateId()).containsExactly("o-3");
    assertThat(db.queryLong("select count(*) from outbox_events where attempts = 1")).isOne();
  }
}
// snippet:end test-class

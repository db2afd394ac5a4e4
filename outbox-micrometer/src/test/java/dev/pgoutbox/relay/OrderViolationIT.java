package dev.pgoutbox.relay;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.micrometer.MicrometerRelayMetrics;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.testing.TestSchema;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A publisher that reports an event published after an earlier event of its aggregate failed in the
 * same batch broke the order: the relay counts it and logs it, never silently.
 */
class OrderViolationIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  @Test
  void aPublisherThatPublishesPastAFailureIsCountedAsAnOrderViolation() throws Exception {
    UUID first = EventRows.insert(db.dsl(), "x", 1);
    UUID second = EventRows.insert(db.dsl(), "x", 2);
    EventRows.insert(db.dsl(), "y", 1);
    // A custom publisher that lies: x1 failed, yet x2 went out.
    Publisher lying =
        batch ->
            CompletableFuture.completedFuture(
                batch.stream()
                    .map(
                        m ->
                            m.id().equals(first)
                                ? PublishResult.retryable("nack")
                                : PublishResult.published())
                    .toList());
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    List<OutboxMessage> violations = new CopyOnWriteArrayList<>();
    RelayListener recording =
        new RelayListener() {
          @Override
          public void onOrderViolation(OutboxMessage message) {
            violations.add(message);
          }
        };
    OutboxRelay relay =
        OutboxRelay.builder()
            .name("liar")
            .dataSource(db.dataSource())
            .schema(db.schema())
            .publisher(lying)
            .listener(
                RelayListener.composite(
                    List.of(recording, new MicrometerRelayMetrics(registry, "liar"))))
            .build();

    relay.runOnce();

    assertThat(violations).extracting(OutboxMessage::id).containsExactly(second);
    assertThat(registry.get("outbox.order.violations").tag("relay", "liar").counter().count())
        .isEqualTo(1.0);
    // It is out: marked, so that it is not sent a second time.
    assertThat(
            db.dsl()
                .select(OUTBOX_EVENTS.PROCESSED_AT)
                .from(OUTBOX_EVENTS)
                .where(OUTBOX_EVENTS.ID.eq(second))
                .fetchSingle()
                .value1())
        .isNotNull();
  }
}

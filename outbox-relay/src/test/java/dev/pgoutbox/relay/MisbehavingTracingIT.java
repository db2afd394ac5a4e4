package dev.pgoutbox.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.TestSchema;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A host's {@link PublishTracing} must not throw and must hand back the batch it was given; one
 * that does otherwise costs the batch its spans, never an event, the order or the commit.
 */
class MisbehavingTracingIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private final RecordingPublisher publisher = new RecordingPublisher();
  private final List<UUID> written = new ArrayList<>();

  @BeforeEach
  void writeTwoAggregates() {
    db.execute("truncate outbox_events");
    written.add(EventRows.insert(db.dsl(), "x", 1));
    written.add(EventRows.insert(db.dsl(), "x", 2));
    written.add(EventRows.insert(db.dsl(), "y", 1));
  }

  @Test
  void aTracingThatThrowsWhenStartingLeavesTheBatchUntraced() throws Exception {
    drainWith(
        (batch, p) -> {
          throw new IllegalStateException("tracer down");
        });

    assertPublishedOnceInOrder();
  }

  @Test
  void aTracingThatReordersTheBatchIsNotBelieved() throws Exception {
    drainWith(
        (batch, p) -> {
          List<OutboxMessage> reversed = new ArrayList<>(batch);
          Collections.reverse(reversed);
          return PublishTracing.BatchTrace.untraced(reversed);
        });

    assertPublishedOnceInOrder();
  }

  @Test
  void aTracingThatDropsOrSwapsEventsIsNotBelieved() throws Exception {
    drainWith(
        (batch, p) -> {
          List<OutboxMessage> swapped = new ArrayList<>(batch);
          swapped.set(0, batch.get(batch.size() - 1));
          return PublishTracing.BatchTrace.untraced(swapped);
        });
    drainWith((batch, p) -> PublishTracing.BatchTrace.untraced(batch.subList(1, batch.size())));

    assertPublishedOnceInOrder();
  }

  @Test
  void aTracingThatThrowsWhileEndingSpansDoesNotRollTheBatchBack() throws Exception {
    drainWith(
        (batch, p) ->
            new PublishTracing.BatchTrace() {
              @Override
              public List<OutboxMessage> messages() {
                return batch;
              }

              @Override
              public void end(int index, PublishTracing.Outcome outcome) {
                throw new IllegalStateException("exporter down");
              }
            });

    assertPublishedOnceInOrder();
  }

  private void drainWith(PublishTracing tracing) throws InterruptedException {
    OutboxRelay relay =
        OutboxRelay.builder()
            .name("misbehaving-tracing")
            .dataSource(db.dataSource())
            .schema(db.schema())
            .publisher(publisher)
            .tracing(tracing)
            .build();
    for (int i = 0; i < 5 && pending() > 0; i++) {
      relay.runOnce();
    }
  }

  /** Each event published once, and x's two in their order. */
  private void assertPublishedOnceInOrder() {
    assertThat(pending()).isZero();
    List<UUID> delivered = publisher.delivered().stream().map(OutboxMessage::id).toList();
    assertThat(delivered).containsExactlyInAnyOrderElementsOf(written);
    assertThat(delivered.indexOf(written.get(0))).isLessThan(delivered.indexOf(written.get(1)));
  }

  private static long pending() {
    return db.queryLong("select count(*) from outbox_events where processed_at is null");
  }
}

package dev.pgoutbox.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A hot aggregate cannot keep the others waiting. */
class StarvationIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  @BeforeEach
  void empty() {
    db.execute("truncate outbox_events");
  }

  @Test
  void anotherAggregatesEventGoesOutInTheNextBatchDespiteAHotBacklog() throws Exception {
    for (int seq = 1; seq <= 2_000; seq++) {
      EventRows.insert(db.dsl(), "hot", seq);
    }
    EventRows.insert(db.dsl(), "zzz-cold", 1);
    RecordingPublisher publisher = new RecordingPublisher();
    OutboxRelay relay =
        OutboxRelay.builder()
            .dataSource(db.dataSource())
            .schema(db.schema())
            .publisher(publisher)
            .config(RelayConfig.builder().batchSize(100).build())
            .build();

    relay.runOnce();

    List<OutboxMessage> first = publisher.batches().get(0);
    assertThat(first)
        .extracting(OutboxMessage::aggregateId)
        .as("the cold aggregate goes out in the first batch, 2,000 hot events notwithstanding")
        .contains("zzz-cold", "hot");
    assertThat(relay.runOnce()).as("alone, the hot aggregate fills a batch").isEqualTo(100);
  }

  @Test
  void underAContinuousStreamToOneAggregateAnotherStillGoesOutPromptly() throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    AtomicBoolean writing = new AtomicBoolean(true);
    AtomicInteger hotSeq = new AtomicInteger();
    Thread hotWriter =
        Thread.ofPlatform()
            .start(
                () -> {
                  while (writing.get()) {
                    db.dsl()
                        .transaction(
                            tx -> {
                              for (int i = 0; i < 50; i++) {
                                EventRows.insert(tx.dsl(), "hot", hotSeq.incrementAndGet());
                              }
                            });
                  }
                });
    try (OutboxRelay relay =
        OutboxRelay.builder()
            .dataSource(db.dataSource())
            .schema(db.schema())
            .publisher(publisher)
            .config(RelayConfig.builder().batchSize(50).pollInterval(Duration.ofMillis(50)).build())
            .build()) {
      relay.start();
      assertThat(Eventually.holdsWithin(() -> publisher.delivered().size() > 500, 30)).isTrue();

      EventRows.insert(db.dsl(), "cold", 1);
      int hotWrittenBeforeCold = hotSeq.get();

      assertThat(
              Eventually.holdsWithin(
                  () ->
                      publisher.delivered().stream().anyMatch(m -> m.aggregateId().equals("cold")),
                  30))
          .as("the cold aggregate's event was published while the hot stream went on")
          .isTrue();
      long hotPublished =
          publisher.delivered().stream().filter(m -> m.aggregateId().equals("hot")).count();
      System.out.println(
          "hot events written before cold: "
              + hotWrittenBeforeCold
              + ", hot published when cold went out (about): "
              + hotPublished);
    } finally {
      writing.set(false);
      hotWriter.join(10_000);
    }
  }
}

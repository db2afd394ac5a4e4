package dev.pgoutbox.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.admin.OutboxAdmin;
import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.relay.testing.TestWalRelays;
import dev.pgoutbox.relay.wal.WalRelay;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Rows written by hand whose {@code created_at} is a value PostgreSQL keeps and a Java date cannot
 * be parsed from as the relays read it: {@code infinity}, {@code -infinity}, a date BC, a year past
 * 9999. The relay uses {@code created_at} only for the event's timestamp and its lag; each such
 * event is published like any other, and the events after it flow. The WAL relay parsed the decoded
 * text and threw on each of them, then attached again and read the same row, forever.
 */
class HandWrittenTimestampsIT {

  @RegisterExtension static final TestSchema db = TestSchema.migratedWithLogicalDecoding(6);

  private static final List<String> ODD_CREATED_AT =
      List.of("infinity", "-infinity", "0044-03-15 12:00:00+00 BC", "20000-01-01 00:00:00+00");

  private ScheduledExecutorService executor;
  private WalRelay walRelay;

  @BeforeEach
  void emptyOutbox() {
    db.execute("truncate outbox_events");
    executor = Executors.newScheduledThreadPool(3, Thread.ofPlatform().daemon(true).factory());
  }

  @AfterEach
  void stop() {
    if (walRelay != null) {
      walRelay.stop(Duration.ofSeconds(2));
    }
    executor.shutdownNow();
    Eventually.await("slot dropped", () -> db.dropReplicationSlot("odd_timestamps"));
  }

  @Test
  void theTableRelayPublishesThemAndTheEventsAfterThem() throws Exception {
    insertOddRows();
    appendAfter();
    // The lags behind the gauges read the first pending row's age: it used to fail on infinity.
    OutboxAdmin admin =
        OutboxAdmin.builder().dataSource(db.dataSource()).schema(db.schema()).build();
    assertThat(admin.oldestPendingAge()).isZero();
    db.execute("select pg_create_logical_replication_slot('odd_timestamps', 'pgoutput')");
    assertThat(admin.walSlot("odd_timestamps")).isPresent();
    RecordingPublisher publisher = new RecordingPublisher();
    OutboxRelay relay =
        OutboxRelay.builder()
            .name("odd-timestamps")
            .dataSource(db.dataSource())
            .schema(db.schema())
            .publisher(publisher)
            .build();

    while (relay.runOnce() > 0) {
      // until nothing is left to claim
    }

    assertPublishedOnce(publisher);
  }

  @Test
  void theWalRelayPublishesThemAndTheEventsAfterThem() {
    RecordingPublisher publisher = new RecordingPublisher();
    walRelay =
        TestWalRelays.builder(db, "odd_timestamps", publisher)
            .name("odd-timestamps")
            .executor(executor)
            .build();
    walRelay.start();
    Eventually.await("the reader attached", walRelay::isReading);

    insertOddRows();
    appendAfter();

    Eventually.await("the event written after them published", () -> publisher.published("after"));
    Eventually.await(
        "everything completed",
        () -> db.queryLong("select count(*) from outbox_events where processed_at is null") == 0);
    assertPublishedOnce(publisher);
  }

  private static void insertOddRows() {
    for (int i = 0; i < ODD_CREATED_AT.size(); i++) {
      db.execute(
          "insert into outbox_events (aggregate_type, aggregate_id, event_type, payload,"
              + " created_at) values ('order', 'odd-"
              + i
              + "', 'order.step', '{\"aggregate\": \"odd-"
              + i
              + "\", \"seq\": 1}', '"
              + ODD_CREATED_AT.get(i)
              + "')");
    }
  }

  private static void appendAfter() {
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    db.dsl().transaction(tx -> outbox.append(tx.dsl(), EventRows.event("after", 1)));
  }

  private static void assertPublishedOnce(RecordingPublisher publisher) {
    assertThat(publisher.delivered())
        .extracting(OutboxMessage::aggregateId)
        .containsExactlyInAnyOrder("odd-0", "odd-1", "odd-2", "odd-3", "after");
    assertThat(db.queryLong("select count(*) from outbox_dead_letters")).isZero();
  }
}

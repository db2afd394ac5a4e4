package dev.pgoutbox.tools.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.core.OutboxTransport;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayListener;
import dev.pgoutbox.relay.wal.WalRelay;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Drains a preloaded outbox from a logical replication slot: with the WAL relay, with the server's
 * decoding alone (its ceiling) and with a reader that only streams (the protocol's own limit). Each
 * preloads identical data behind a fresh slot.
 */
final class WalDrains {

  private WalDrains() {}

  /**
   * Creates the WAL relay's publication and slot, preloads the same data (so it is decoded from the
   * slot, not parked as a backlog older than it), then drains it with one {@link WalRelay} and the
   * publisher; the slot is dropped afterwards.
   */
  static Drains.Outcome wal(
      BenchDatabase db, Drains.Setup setup, Drains.PublisherFactory publishers) throws Exception {
    return wal(db, setup, publishers, OutboxTransport.ROWS);
  }

  /**
   * {@link #wal(BenchDatabase, Drains.Setup, Drains.PublisherFactory)} with events of {@code
   * transport}.
   */
  static Drains.Outcome wal(
      BenchDatabase db,
      Drains.Setup setup,
      Drains.PublisherFactory publishers,
      OutboxTransport transport)
      throws Exception {
    Preloaded preloaded = preloadBehindSlot(db, setup, transport);
    String slot = preloaded.slot();
    Map<String, Integer> written = preloaded.written();
    Deliveries deliveries = new Deliveries();
    AtomicLong committed = new AtomicLong();
    CountDownLatch done = new CountDownLatch(1);
    RelayListener counter =
        new RelayListener() {
          @Override
          public void onBatch(BatchReport report) {
            if (committed.addAndGet(report.published()) >= setup.events()) {
              done.countDown();
            }
          }
        };
    ScheduledExecutorService executor =
        Executors.newScheduledThreadPool(
            WalRelay.OWN_THREADS, Thread.ofPlatform().name("bench-wal-relay").factory());
    Publisher publisher = publishers.create(deliveries);
    HikariDataSource pool = db.pool(3);
    WalRelay relay =
        WalRelay.builder()
            .name("bench-wal")
            .transport(transport)
            .dataSource(pool)
            .schema(db.schema())
            .publisher(publisher)
            .executor(executor)
            .slotName(slot)
            .publicationName(slot)
            .config(setup.walConfig().pollInterval(Duration.ofMillis(100)).build())
            .listener(counter)
            .build();
    try {
      long tableBytesBefore = tableBytes(db);
      long start = System.nanoTime();
      relay.start();
      if (!done.await(30, TimeUnit.MINUTES)) {
        throw new IllegalStateException("WAL drain did not finish within 30 minutes");
      }
      double seconds = (System.nanoTime() - start) / 1e9;
      // The rows are completed off the reader's path; wait for that too, outside the timing.
      long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
      while (db.pending() > 0 && System.nanoTime() < deadline) {
        Thread.sleep(50);
      }
      relay.close();
      return new Drains.Outcome(
          committed.get(),
          seconds,
          deliveries.check(written),
          db.pending(),
          tableBytesBefore,
          tableBytes(db));
    } finally {
      relay.close();
      executor.shutdownNow();
      publisher.close();
      dropWalSlot(db, slot);
    }
  }

  /**
   * Decoding alone: preloads the same data behind a fresh slot, then times one {@code
   * pg_logical_slot_get_binary_changes} call that decodes all of it through {@code pgoutput}, on
   * the server, with no client work.
   */
  static Drains.Outcome walCeiling(BenchDatabase db, Drains.Setup setup) throws Exception {
    return walCeiling(db, setup, OutboxTransport.ROWS);
  }

  /**
   * {@link #walCeiling(BenchDatabase, Drains.Setup)} with events of {@code transport}: for
   * messages, the decoding of the same events as logical messages ({@code messages 'true'}),
   * counting 'M'.
   */
  static Drains.Outcome walCeiling(BenchDatabase db, Drains.Setup setup, OutboxTransport transport)
      throws Exception {
    boolean messages = transport == OutboxTransport.MESSAGES;
    String slot = preloadBehindSlot(db, setup, transport).slot();
    try {
      long start = System.nanoTime();
      long inserts =
          db.queryLong(
              "SELECT count(*) FROM pg_logical_slot_get_binary_changes('"
                  + slot
                  + "', NULL, NULL, 'proto_version', '1', 'publication_names', '"
                  + slot
                  + "'"
                  + (messages ? ", 'messages', 'true'" : "")
                  + ") WHERE get_byte(data, 0) = "
                  + (messages ? 77 : 73));
      double seconds = (System.nanoTime() - start) / 1e9;
      return new Drains.Outcome(inserts, seconds, null, db.pending());
    } finally {
      dropWalSlot(db, slot);
    }
  }

  /** A fresh publication on the bench schema's outbox and a fresh pgoutput slot; their name. */
  static String walSlot(BenchDatabase db) throws Exception {
    String slot = "pgoutbox_bench_" + db.schema();
    if (slot.length() > 63) {
      slot = slot.substring(0, 63);
    }
    dropWalSlot(db, slot);
    db.execute(
        "CREATE PUBLICATION "
            + slot
            + " FOR TABLE "
            + db.schema()
            + ".outbox_events WITH (publish = 'insert')");
    db.execute("SELECT pg_create_logical_replication_slot('" + slot + "', 'pgoutput')");
    return slot;
  }

  /**
   * Drops the slot and the publication of {@link #walSlot}. A relay that just stopped may leave its
   * WAL sender running for a moment: the slot cannot be dropped while it is active, so this waits
   * (at most 10 s) for it to be released.
   */
  static void dropWalSlot(BenchDatabase db, String slot) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (db.queryLong(
                "SELECT count(*) FROM pg_replication_slots WHERE active AND slot_name = '"
                    + slot
                    + "'")
            > 0
        && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    db.execute(
        "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '"
            + slot
            + "'");
    db.execute("DROP PUBLICATION IF EXISTS " + slot);
  }

  /**
   * Streaming alone: preloads the same data behind a fresh slot, then streams it through {@code
   * pgoutput} on a replication connection that only counts the inserts (messages, for that
   * transport) and acknowledges them ({@link SlotDrain}); timed from opening the connection to the
   * last event counted. The fastest any reader of the replication protocol drains the slot: beside
   * {@link #walCeiling} it separates what the WAL sender's streaming costs from what the WAL relay
   * adds to it.
   */
  static Drains.Outcome walStream(BenchDatabase db, Drains.Setup setup, OutboxTransport transport)
      throws Exception {
    String slot = preloadBehindSlot(db, setup, transport).slot();
    boolean messages = transport == OutboxTransport.MESSAGES;
    try {
      HikariDataSource pool = db.pool(1);
      long start = System.nanoTime();
      SlotDrain drain = SlotDrain.start(pool, slot, slot, messages);
      long deadline = start + TimeUnit.MINUTES.toNanos(30);
      while (drain.inserts() < setup.events() && System.nanoTime() < deadline) {
        Thread.onSpinWait();
        Thread.sleep(0, 100_000);
      }
      double seconds = (System.nanoTime() - start) / 1e9;
      long streamed = drain.inserts();
      drain.stop();
      if (streamed < setup.events()) {
        throw new IllegalStateException(
            "the slot streamed " + streamed + " of " + setup.events() + " events in 30 minutes");
      }
      return new Drains.Outcome(streamed, seconds, null, db.pending());
    } finally {
      dropWalSlot(db, slot);
    }
  }

  /** The outbox table's size with its indexes and TOAST. */
  private static long tableBytes(BenchDatabase db) throws Exception {
    return db.queryLong("SELECT pg_total_relation_size('outbox_events')");
  }

  /** A fresh slot and the data preloaded behind it. */
  private record Preloaded(String slot, Map<String, Integer> written) {}

  /**
   * Resets the bench schema, creates a fresh publication and slot ({@link #walSlot}), then preloads
   * the events of {@code transport} behind it, so that each is decoded from the slot.
   */
  private static Preloaded preloadBehindSlot(
      BenchDatabase db, Drains.Setup setup, OutboxTransport transport) throws Exception {
    db.resetSchema();
    boolean messages = transport == OutboxTransport.MESSAGES;
    if (messages) {
      TransportOption.grantMessages(db);
    }
    String slot = walSlot(db);
    Map<String, Integer> written =
        messages
            ? MessagePreload.preload(db, setup.events(), setup.aggregates())
            : db.preload(setup.events(), setup.aggregates());
    return new Preloaded(slot, written);
  }
}

package dev.pgoutbox.tools.bench;

import dev.pgoutbox.relay.Completion;
import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.RelayListener;
import dev.pgoutbox.relay.wal.WalRelay;
import java.time.Duration;
import java.util.Collections;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * A relay publishing, with a no-op publisher, what writers write while {@code bench writer}
 * measures them: a table relay, or a WAL relay on a slot and publication of its own (created here,
 * dropped on close), so the writers pay what each kind of relay costs the database beside them; or
 * only a reader of such a slot ({@link SlotDrain}), for the server's decoding alone.
 */
final class BesideRelay {

  /** Which relay runs beside the writers. */
  enum Kind {
    TABLE,
    WAL,
    /** The slot streamed and acknowledged, nothing published or completed. */
    DECODING_ONLY
  }

  private final BenchDatabase db;
  private final @Nullable ScheduledExecutorService executor;
  private final @Nullable AutoCloseable relay;
  private final @Nullable SlotDrain slotDrain;
  private final @Nullable String slot;
  private final LongSupplier published;

  private BesideRelay(
      BenchDatabase db,
      @Nullable ScheduledExecutorService executor,
      @Nullable AutoCloseable relay,
      @Nullable SlotDrain slotDrain,
      @Nullable String slot,
      LongSupplier published) {
    this.db = db;
    this.executor = executor;
    this.relay = relay;
    this.slotDrain = slotDrain;
    this.slot = slot;
    this.published = published;
  }

  /** Starts a relay of {@code kind} beside the writers. */
  static BesideRelay start(BenchDatabase db, Kind kind) throws Exception {
    if (kind == Kind.DECODING_ONLY) {
      String slot = WalDrains.walSlot(db);
      SlotDrain drain = SlotDrain.start(db.pool(1), slot, slot);
      return new BesideRelay(db, null, null, drain, slot, drain::inserts);
    }
    ScheduledExecutorService executor =
        Executors.newScheduledThreadPool(
            WalRelay.OWN_THREADS, Thread.ofPlatform().name("bench-beside-relay").factory());
    AtomicLong published = new AtomicLong();
    Publisher noop =
        batch ->
            CompletableFuture.completedFuture(
                Collections.nCopies(batch.size(), PublishResult.published()));
    RelayListener counter =
        new RelayListener() {
          @Override
          public void onBatch(BatchReport report) {
            published.addAndGet(report.published());
          }
        };
    // Marked, not deleted (the WAL relay's default): the writer scenario counts every event it
    // wrote in the table afterwards, to report what was lost.
    RelayConfig config =
        RelayConfig.builder()
            .pollInterval(Duration.ofMillis(100))
            .completion(Completion.MARK_PROCESSED)
            .build();
    if (kind == Kind.TABLE) {
      OutboxRelay relay =
          OutboxRelay.builder()
              .name("bench-beside-table")
              .dataSource(db.pool(2))
              .schema(db.schema())
              .publisher(noop)
              .executor(executor)
              .config(config)
              .listener(counter)
              .build();
      relay.start();
      return new BesideRelay(db, executor, relay, null, null, published::get);
    }
    String slot = WalDrains.walSlot(db);
    WalRelay relay =
        WalRelay.builder()
            .name("bench-beside-wal")
            .dataSource(db.pool(3))
            .schema(db.schema())
            .publisher(noop)
            .executor(executor)
            .slotName(slot)
            .publicationName(slot)
            .config(config)
            .listener(counter)
            .build();
    relay.start();
    return new BesideRelay(db, executor, relay, null, slot, published::get);
  }

  /** Events it published so far; for {@link Kind#DECODING_ONLY}, the inserts it streamed. */
  long published() {
    return published.getAsLong();
  }

  /** Stops the relay; a WAL relay's slot and publication are dropped. */
  void stop() throws Exception {
    if (relay != null) {
      relay.close();
    }
    if (slotDrain != null) {
      slotDrain.stop();
    }
    if (executor != null) {
      executor.shutdownNow();
    }
    if (slot != null) {
      WalDrains.dropWalSlot(db, slot);
    }
  }
}

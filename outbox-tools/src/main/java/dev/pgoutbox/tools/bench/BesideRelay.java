package dev.pgoutbox.tools.bench;

import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.RelayListener;
import dev.pgoutbox.relay.WalRelay;
import java.time.Duration;
import java.util.Collections;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicLong;
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
  private final ScheduledExecutorService executor;
  private final AtomicLong published = new AtomicLong();
  private final @Nullable OutboxRelay tableRelay;
  private final @Nullable WalRelay walRelay;
  private final @Nullable SlotDrain slotDrain;
  private final @Nullable String slot;

  private BesideRelay(BenchDatabase db, Kind kind) throws Exception {
    this.db = db;
    this.executor =
        Executors.newScheduledThreadPool(
            WalRelay.OWN_THREADS, Thread.ofPlatform().name("bench-beside-relay").factory());
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
    RelayConfig config = RelayConfig.builder().pollInterval(Duration.ofMillis(100)).build();
    if (kind == Kind.DECODING_ONLY) {
      this.slot = Drains.walSlot(db);
      this.tableRelay = null;
      this.walRelay = null;
      this.slotDrain = SlotDrain.start(db.pool(1), slot, slot);
    } else if (kind == Kind.TABLE) {
      this.slot = null;
      this.walRelay = null;
      this.slotDrain = null;
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
      this.tableRelay = relay;
      relay.start();
    } else {
      this.slot = Drains.walSlot(db);
      this.tableRelay = null;
      this.slotDrain = null;
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
      this.walRelay = relay;
      relay.start();
    }
  }

  /** Starts a relay of {@code kind} beside the writers. */
  static BesideRelay start(BenchDatabase db, Kind kind) throws Exception {
    return new BesideRelay(db, kind);
  }

  /** Events it published so far; for {@link Kind#DECODING_ONLY}, the inserts it streamed. */
  long published() {
    return slotDrain != null ? slotDrain.inserts() : published.get();
  }

  /** Stops the relay; a WAL relay's slot and publication are dropped. */
  void stop() throws Exception {
    if (tableRelay != null) {
      tableRelay.close();
    }
    if (walRelay != null) {
      walRelay.close();
    }
    if (slotDrain != null) {
      slotDrain.stop();
    }
    executor.shutdownNow();
    if (slot != null) {
      Drains.dropWalSlot(db, slot);
    }
  }
}

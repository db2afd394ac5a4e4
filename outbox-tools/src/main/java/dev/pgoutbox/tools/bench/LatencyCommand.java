package dev.pgoutbox.tools.bench;

import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.RelayListener;
import dev.pgoutbox.relay.wal.WalRelay;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.HdrHistogram.Histogram;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code bench latency}: commit-to-publish latency while writers commit one-event transactions at a
 * steady rate, with the table relay woken by notifications or polling, or with the WAL relay
 * reading its slot.
 */
@Command(
    name = "latency",
    mixinStandardHelpOptions = true,
    description =
        "--writers commit one-event transactions at --rate events/s for --seconds while relays"
            + " run (wake-up on, or --poll-only; or --source wal); commit-to-publish percentiles.")
final class LatencyCommand implements Callable<Integer> {

  @Mixin BenchOptions options;

  @Mixin TransportOption transport;

  @Option(
      names = "--writers",
      defaultValue = "4",
      description = "Writers (default ${DEFAULT-VALUE})")
  int writers;

  @Option(
      names = "--rate",
      defaultValue = "500",
      description = "Events/s in all (default ${DEFAULT-VALUE})")
  int rate;

  @Option(names = "--seconds", description = "Duration (default 30; --quick 3)")
  Integer seconds;

  @Option(names = "--relays", defaultValue = "1", description = "Relays (default ${DEFAULT-VALUE})")
  int relays;

  @Option(names = "--poll-only", description = "Relays poll instead of listening for notifications")
  boolean pollOnly;

  @Option(
      names = "--source",
      defaultValue = "table",
      description =
          "table: OutboxRelay; wal: one WalRelay reading a logical replication slot (wake_up"
              + " stream; its batches start once the reader has decoded them, so wait_* is commit"
              + " to decoded and claim_* the reader's step before the publish; needs"
              + " wal_level=logical: the embedded PostgreSQL is started with it)"
              + " (default ${DEFAULT-VALUE})")
  String source = "table";

  @Option(
      names = "--max-drain-seconds",
      defaultValue = "300",
      description =
          "After writing stops, wait at most this long for the rest; lost counts what still has"
              + " not arrived (default ${DEFAULT-VALUE})")
  int maxDrainSeconds;

  @Option(
      names = "--progress-seconds",
      defaultValue = "0",
      description =
          "Print committed/published/pending and the window's slowest batch to stderr this often"
              + " (0: never; default ${DEFAULT-VALUE})")
  int progressSeconds;

  @Option(
      names = "--warmup-seconds",
      defaultValue = "0",
      description =
          "Write at --rate this long first: those events are published and checked but left out of"
              + " every percentile, so the figures describe a relay the JIT has compiled, as a"
              + " long-running one is (default ${DEFAULT-VALUE})")
  int warmupSeconds;

  @Option(
      names = "--relay-threads",
      defaultValue = "platform",
      description =
          "platform or virtual: the threads of the executor each relay is given (relay_threads)."
              + " A WAL relay's reader waits for data on its thread 1 ms at a time and must run as"
              + " soon as data arrives; on a virtual thread it also waits for a free carrier"
              + " (default ${DEFAULT-VALUE})")
  String relayThreads = "platform";

  @Option(
      names = "--poll-interval-ms",
      defaultValue = "1000",
      description = "Relay poll interval (default ${DEFAULT-VALUE})")
  long pollIntervalMillis;

  @Override
  public Integer call() throws Exception {
    int duration = seconds != null ? seconds : options.quick ? 3 : 30;
    if (writers < 1
        || rate < 1
        || relays < 1
        || maxDrainSeconds < 0
        || progressSeconds < 0
        || warmupSeconds < 0) {
      throw new IllegalArgumentException(
          "--writers, --rate and --relays must be at least 1, --max-drain-seconds,"
              + " --progress-seconds and --warmup-seconds at least 0");
    }
    if (!relayThreads.equals("platform") && !relayThreads.equals("virtual")) {
      throw new IllegalArgumentException(
          "--relay-threads must be platform or virtual, was '" + relayThreads + "'");
    }
    ThreadFactory relayThreadFactory =
        relayThreads.equals("virtual")
            ? Thread.ofVirtual().factory()
            : Thread.ofPlatform().daemon(true).factory();
    boolean wal = DrainCommand.isWal(source);
    if (wal && (relays != 1 || pollOnly)) {
      throw new IllegalArgumentException(
          "--source wal measures one WAL relay, which reads its slot: --relays must be 1 and"
              + " --poll-only is for --source table");
    }
    long pendingAtEnd;
    double writeSeconds;
    double waitedSeconds;
    Double drainSeconds = null;
    try (BenchDatabase db = BenchDatabase.open(options, wal)) {
      db.resetSchema();
      if (transport.messages() && !wal) {
        throw new IllegalArgumentException("--transport messages needs --source wal");
      }
      transport.prepare(db);
      long tableBytesBefore = db.queryLong("SELECT pg_total_relation_size('outbox_events')");
      @Nullable String slot = wal ? WalDrains.walSlot(db) : null;
      Outbox outbox = Outbox.builder().schema(db.schema()).transport(transport.value()).build();
      Map<UUID, Long> committedAt = new ConcurrentHashMap<>();
      Map<UUID, Long> publishedAt = new ConcurrentHashMap<>();
      Deliveries deliveries = new Deliveries();
      RelayConfig config =
          RelayConfig.builder()
              .listenForNotifications(!pollOnly)
              .pollInterval(Duration.ofMillis(pollIntervalMillis))
              .build();
      List<AutoCloseable> running = new ArrayList<>();
      List<ScheduledExecutorService> executors = new ArrayList<>();
      Map<String, Integer> written = new ConcurrentHashMap<>();
      Histogram batchMicros = Micros.histogram();
      Histogram windowMicros = Micros.histogram();
      LatencyBreakdown breakdown = new LatencyBreakdown();
      // Percentiles count only what happens from here on (after --warmup-seconds of writing).
      AtomicLong measureFrom = new AtomicLong(Long.MAX_VALUE);
      RelayListener batchTimer =
          new RelayListener() {
            @Override
            public void onBatch(BatchReport report) {
              if (System.nanoTime() - report.duration().toNanos() < measureFrom.get()) {
                return;
              }
              synchronized (batchMicros) {
                Micros.record(batchMicros, report.duration().toNanos());
              }
              synchronized (windowMicros) {
                Micros.record(windowMicros, report.duration().toNanos());
              }
              breakdown.onBatch(report.duration());
            }
          };
      Publisher publisher =
          batch -> {
            long now = System.nanoTime();
            for (OutboxMessage message : batch) {
              publishedAt.putIfAbsent(message.id(), now);
            }
            deliveries.addAll(batch);
            return CompletableFuture.completedFuture(
                Collections.nCopies(batch.size(), PublishResult.published()));
          };
      try {
        if (slot != null) {
          ScheduledExecutorService executor =
              Executors.newScheduledThreadPool(WalRelay.OWN_THREADS, relayThreadFactory);
          executors.add(executor);
          WalRelay relay =
              WalRelay.builder()
                  .name("latency-wal")
                  .transport(transport.value())
                  .dataSource(db.pool(3))
                  .schema(db.schema())
                  .executor(executor)
                  .slotName(slot)
                  .publicationName(slot)
                  .config(config)
                  .listener(batchTimer)
                  .publisher(publisher)
                  .build();
          running.add(relay);
          relay.start();
          long attachDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
          while (!relay.isReading() && System.nanoTime() < attachDeadline) {
            TimeUnit.MILLISECONDS.sleep(10);
          }
          if (!relay.isReading()) {
            throw new IllegalStateException("the WAL relay did not attach to its slot in 30 s");
          }
        }
        for (int i = 0; slot == null && i < relays; i++) {
          // Two threads, as the relay's docs advise: its gauge refresh must not queue behind it.
          ScheduledExecutorService executor =
              Executors.newScheduledThreadPool(2, relayThreadFactory);
          executors.add(executor);
          OutboxRelay relay =
              OutboxRelay.builder()
                  .name("latency-" + i)
                  .dataSource(db.pool(2))
                  .schema(db.schema())
                  .executor(executor)
                  .config(config)
                  .listener(batchTimer)
                  .publisher(publisher)
                  .build();
          running.add(relay);
          relay.start();
        }
        TimeUnit.MILLISECONDS.sleep(500); // relays idle and listening (or attached to the slot)

        long writeStart = System.nanoTime();
        measureFrom.set(writeStart + TimeUnit.SECONDS.toNanos(warmupSeconds));
        // Writers that cannot keep --rate stop at the end of --seconds anyway: events_per_s then
        // tells the rate they reached.
        long writeDeadline = writeStart + TimeUnit.SECONDS.toNanos(duration + warmupSeconds);
        PacedWriters paced =
            PacedWriters.start(
                db,
                outbox,
                writers,
                rate,
                (long) rate * (duration + warmupSeconds),
                50,
                writeStart,
                writeDeadline,
                committedAt::put);
        Progress progress = new Progress(committedAt, publishedAt, windowMicros);
        while (!paced.isDone()) {
          progress.maybePrint(writeStart, progressSeconds, "writing");
          TimeUnit.MILLISECONDS.sleep(20);
        }
        written.putAll(paced.await());
        long writeEnd = System.nanoTime();
        writeSeconds = (writeEnd - writeStart) / 1e9;
        long expected = committedAt.size();
        pendingAtEnd = Math.max(0, expected - publishedAt.size());
        long deadline = writeEnd + TimeUnit.SECONDS.toNanos(maxDrainSeconds);
        while (publishedAt.size() < expected && System.nanoTime() < deadline) {
          progress.maybePrint(writeStart, progressSeconds, "draining");
          TimeUnit.MILLISECONDS.sleep(20);
        }
        long drainEnd = System.nanoTime();
        waitedSeconds = (drainEnd - writeEnd) / 1e9;
        if (publishedAt.size() >= expected) {
          drainSeconds = Result.round(waitedSeconds, 3);
        }
      } finally {
        for (AutoCloseable relay : running) {
          relay.close();
        }
        executors.forEach(ExecutorService::shutdownNow);
        if (slot != null) {
          WalDrains.dropWalSlot(db, slot);
        }
      }

      // After the drain (and the relays' completions): what the delivered events left behind.
      long tableBytesAfter = db.queryLong("SELECT pg_total_relation_size('outbox_events')");
      Histogram latency = Micros.histogram();
      Map<UUID, Long> measured = new HashMap<>();
      committedAt.forEach(
          (id, committed) -> {
            if (committed >= measureFrom.get()) {
              measured.put(id, committed);
            }
          });
      for (Map.Entry<UUID, Long> commit : measured.entrySet()) {
        Long published = publishedAt.get(commit.getKey());
        if (published != null) {
          // A relay can see the commit before the writer's thread records it: count that as 0.
          Micros.record(latency, published - commit.getValue());
        }
      }
      Result result =
          new Result("latency")
              .put("writers", writers)
              .put("rate", rate)
              .put("relays", relays)
              .put("source", source)
              .put("transport", transport.label())
              .put("outbox_table_bytes_before", tableBytesBefore)
              .put("outbox_table_bytes_after", tableBytesAfter)
              .put("wake_up", wal ? "stream" : pollOnly ? "poll-only" : "notify")
              .put("relay_threads", relayThreads)
              .put("poll_interval_ms", pollIntervalMillis)
              .put("events", committedAt.size())
              .put("seconds", duration)
              .put("warmup_seconds", warmupSeconds)
              .put("measured_events", measured.size())
              // What the writers achieved: below --rate when the machine could not keep their pace.
              .put("write_seconds", Result.round(writeSeconds, 3))
              .put("events_per_s", Result.round(committedAt.size() / writeSeconds, 0))
              // Within one second of writes behind when writing stopped.
              .put("kept_up", pendingAtEnd <= rate)
              .put("pending_at_end", pendingAtEnd)
              .put("drain_seconds", drainSeconds)
              .put("waited_s", Result.round(waitedSeconds, 3))
              .put("p50_ms", Micros.millis(latency, 50))
              .put("p99_ms", Micros.millis(latency, 99))
              .put("max_ms", Micros.maxMillis(latency))
              .put("batches", batchMicros.getTotalCount())
              .put("batch_p50_ms", Micros.millis(batchMicros, 50))
              .put("batch_p99_ms", Micros.millis(batchMicros, 99));
      if (relays == 1) {
        breakdown.into(result, measured, publishedAt);
      }
      // lost: events that had still not arrived waited_s after writing stopped.
      deliveries.check(written).into(result);
      db.describe(result);
      result.print(System.out, options.json);
      return result.verified() ? 0 : 1;
    }
  }

  /** Progress lines on stderr, for watching a run fall behind (or not). */
  private static final class Progress {
    private final Map<UUID, Long> committedAt;
    private final Map<UUID, Long> publishedAt;
    private final Histogram windowMicros;
    private long last = System.nanoTime();

    Progress(Map<UUID, Long> committedAt, Map<UUID, Long> publishedAt, Histogram windowMicros) {
      this.committedAt = committedAt;
      this.publishedAt = publishedAt;
      this.windowMicros = windowMicros;
    }

    void maybePrint(long start, int everySeconds, String phase) {
      long now = System.nanoTime();
      if (everySeconds <= 0 || now - last < TimeUnit.SECONDS.toNanos(everySeconds)) {
        return;
      }
      last = now;
      long committed = committedAt.size();
      long published = publishedAt.size();
      long batches;
      double slowestMillis;
      synchronized (windowMicros) {
        batches = windowMicros.getTotalCount();
        slowestMillis = windowMicros.getMaxValue() / 1000.0;
        windowMicros.reset();
      }
      System.err.printf(
          java.util.Locale.ROOT,
          "latency: t=%.0fs %s committed=%d published=%d pending=%d batches=%d"
              + " slowest_batch_ms=%.1f%n",
          (now - start) / 1e9,
          phase,
          committed,
          published,
          Math.max(0, committed - published),
          batches,
          slowestMillis);
    }
  }
}

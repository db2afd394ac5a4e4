package dev.pgoutbox.tools.bench;

import dev.pgoutbox.admin.OutboxAdmin;
import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.OutboxTableStats;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayConfig;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code bench soak}: writers at a steady rate for an hour through the real {@link Outbox} and
 * relays, with windows in which a separate session holds back the xmin horizon, sampled every few
 * seconds: latency, backlog, dead rows, sizes, claim time. Then the delivery check.
 */
@Command(
    name = "soak",
    mixinStandardHelpOptions = true,
    description =
        "Writers commit one-event transactions at --rate events/s for --seconds while --relays"
            + " relays publish; a separate session keeps a transaction open in each --hold-xmin"
            + " window. Every --sample-seconds: commit-to-publish p50/p99/max, pending, dead and"
            + " live rows, table and index sizes, claim time, autovacuum runs. At the end: lost,"
            + " reordered, duplicates, and p99 before, during and after each window.")
final class SoakCommand implements Callable<Integer> {

  @Mixin BenchOptions options;

  @Mixin RelayOptions relaysOptions;

  @Mixin BenchPublishers publishers;

  @Option(
      names = "--rate",
      defaultValue = "2000",
      description = "Events/s in all (default ${DEFAULT-VALUE})")
  int rate;

  @Option(
      names = "--seconds",
      description = "How long the writers write (default 3600; --quick 120)")
  @Nullable Integer seconds;

  @Option(
      names = "--writers",
      defaultValue = "8",
      description = "Writers, each on its own connection (default ${DEFAULT-VALUE})")
  int writers;

  @Option(
      names = "--aggregates",
      defaultValue = "1000",
      description = "Aggregates in all, shared out among the writers (default ${DEFAULT-VALUE})")
  int aggregates;

  @Option(
      names = "--hold-xmin",
      paramLabel = "<start>:<duration>",
      description =
          "Keep a transaction with an xid open in a separate session from <start> for <duration>"
              + " (seconds after writing began, or with a unit: 25m:10m); repeatable; none for no"
              + " window (default: one window of 10 minutes, at most a third of --seconds, in the"
              + " middle)")
  List<String> holdXmin = new ArrayList<>();

  @Option(
      names = "--retention",
      paramLabel = "<older-than>",
      description =
          "Purge processed events older than this (e.g. 5m) with OutboxAdmin.scheduleRetention,"
              + " as a host would (default: no retention)")
  @Nullable String retention;

  @Option(
      names = "--retention-every",
      defaultValue = "60s",
      description = "How often retention runs (default ${DEFAULT-VALUE})")
  String retentionEvery;

  @Option(
      names = "--retention-batch",
      defaultValue = "1000",
      description = "Rows retention deletes per statement (default ${DEFAULT-VALUE})")
  int retentionBatch;

  @Option(
      names = "--rebuild-pending-indexes",
      description =
          "After each --hold-xmin window, once the relays have caught up, rebuild the pending"
              + " indexes with OutboxAdmin.rebuildPendingIndexes, as a host acting on"
              + " outbox_table_pending_index_size_bytes would (index_rebuilds in the JSON)")
  boolean rebuildPendingIndexes;

  @Option(
      names = "--sample-seconds",
      description = "Seconds between samples (default 10)",
      defaultValue = "10")
  int sampleSeconds;

  @Option(
      names = "--healthy-p99-ms",
      defaultValue = "50",
      description =
          "An interval meets the goal when its p99 is at most this and the relays kept up: what"
              + " recovery after a window waits for (default ${DEFAULT-VALUE})")
  double healthyP99Millis;

  @Option(
      names = "--max-drain-seconds",
      defaultValue = "300",
      description =
          "After writing stops, wait at most this long for the rest; lost counts what still has"
              + " not arrived (default ${DEFAULT-VALUE})")
  int maxDrainSeconds;

  @Override
  public Integer call() throws Exception {
    int duration = seconds != null ? seconds : options.quick ? 120 : 3600;
    require(rate >= 1, "--rate must be at least 1, was " + rate);
    require(duration >= 1, "--seconds must be at least 1, was " + duration);
    require(writers >= 1, "--writers must be at least 1, was " + writers);
    require(
        aggregates >= writers,
        "--aggregates must be at least --writers (" + writers + "), was " + aggregates);
    require(relaysOptions.relays >= 1, "--relays must be at least 1, was " + relaysOptions.relays);
    require(
        sampleSeconds >= 1 && sampleSeconds <= 3600,
        "--sample-seconds must be between 1 and 3600, was " + sampleSeconds);
    require(maxDrainSeconds >= 0, "--max-drain-seconds must be at least 0, was " + maxDrainSeconds);
    require(
        retentionBatch >= 1 && retentionBatch <= OutboxAdmin.MAX_PURGE_BATCH_SIZE,
        "--retention-batch must be between 1 and "
            + OutboxAdmin.MAX_PURGE_BATCH_SIZE
            + ", was "
            + retentionBatch);
    List<HoldWindow> windows = HoldWindow.of(holdXmin, duration);
    @Nullable Duration retentionAge =
        retention == null ? null : Duration.ofSeconds(HoldWindow.seconds(retention, "--retention"));
    Duration retentionPeriod =
        Duration.ofSeconds(HoldWindow.seconds(retentionEvery, "--retention-every"));
    require(!retentionPeriod.isZero(), "--retention-every must be at least 1 second");
    RelayConfig config =
        RelayConfig.builder()
            .ordering(DrainCommand.orderingOf(relaysOptions.ordering))
            .completion(DrainCommand.completionOf(relaysOptions.completion()))
            .build();

    try (BenchDatabase db = BenchDatabase.open(options);
        BenchPublishers.Session session = publishers.open()) {
      db.resetSchema();
      Outbox outbox = Outbox.builder().schema(db.schema()).build();
      CommitToPublish latencies = new CommitToPublish();
      Deliveries deliveries =
          new Deliveries(batch -> latencies.published(batch, System.nanoTime()));
      Recorder batchTimes = BatchTimer.recorder();
      Recorder claimTimes = BatchTimer.recorder();
      OutboxAdmin admin = OutboxAdmin.builder().dataSource(db.pool(2)).schema(db.schema()).build();
      List<OutboxRelay> relays = new ArrayList<>();
      List<Publisher> created = new ArrayList<>();
      List<ScheduledExecutorService> executors = new ArrayList<>();
      List<SoakInterval> intervals = new ArrayList<>();
      Map<String, Integer> written;
      double writeSeconds;
      long pendingAtEnd;
      @Nullable Double drainSeconds = null;
      List<XminHolder.Held> held;
      long retentionDeleted = 0;
      List<Map<String, Object>> indexRebuilds = List.of();
      try {
        for (int i = 0; i < relaysOptions.relays; i++) {
          // Two threads, as the relay's docs advise: its gauge refresh must not queue behind it.
          ScheduledExecutorService executor =
              Executors.newScheduledThreadPool(2, Thread.ofVirtual().factory());
          executors.add(executor);
          BatchTimer timer = new BatchTimer(batchTimes, claimTimes);
          Publisher publisher = timer.wrap(session.factory().create(deliveries));
          created.add(publisher);
          OutboxRelay relay =
              OutboxRelay.builder()
                  .name("soak-" + i)
                  .dataSource(db.pool(2))
                  .schema(db.schema())
                  .executor(executor)
                  .config(config)
                  .listener(timer)
                  .publisher(publisher)
                  .build();
          relays.add(relay);
          relay.start();
        }
        ScheduledExecutorService housekeeping =
            Executors.newSingleThreadScheduledExecutor(
                Thread.ofPlatform().name("soak-retention").daemon().factory());
        executors.add(housekeeping);
        if (retentionAge != null) {
          admin.scheduleRetention(housekeeping, retentionPeriod, retentionAge, retentionBatch);
        }
        TimeUnit.MILLISECONDS.sleep(500); // relays idle and listening

        long writeStart = System.nanoTime();
        long writeEnd = writeStart + TimeUnit.SECONDS.toNanos(duration);
        Sampler sampler =
            new Sampler(admin, latencies, batchTimes, claimTimes, windows, writeStart);
        PendingIndexRebuilds rebuilds =
            new PendingIndexRebuilds(
                OutboxAdmin.builder().dataSource(db.pool(1)).schema(db.schema()).build(),
                housekeeping,
                rebuildPendingIndexes ? windows : List.of());
        PacedWriters paced =
            PacedWriters.start(
                db,
                outbox,
                writers,
                rate,
                (long) rate * duration,
                aggregates / writers,
                writeStart,
                writeEnd,
                latencies::committed);
        try (XminHolder holder = XminHolder.start(db, windows, writeStart)) {
          long next = writeStart;
          while (!paced.isDone()) {
            next += TimeUnit.SECONDS.toNanos(sampleSeconds);
            while (!paced.isDone() && System.nanoTime() - next < 0) {
              LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
            }
            SoakInterval interval = sampler.sample(true, paced);
            intervals.add(interval);
            progress(interval);
            rebuilds.afterSample(interval);
            deliveries.absorb();
          }
          written = paced.await();
          long stopped = System.nanoTime();
          writeSeconds = (stopped - writeStart) / 1e9;
          pendingAtEnd = latencies.unpublished();
          long deadline = stopped + TimeUnit.SECONDS.toNanos(maxDrainSeconds);
          next = stopped;
          // At least one sample after writing: what was published since the last one counts too.
          do {
            next += TimeUnit.SECONDS.toNanos(sampleSeconds);
            while (latencies.unpublished() > 0
                && System.nanoTime() - next < 0
                && System.nanoTime() - deadline < 0) {
              LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
            }
            if (drainSeconds == null && latencies.unpublished() == 0) {
              drainSeconds = Result.round((System.nanoTime() - stopped) / 1e9, 3);
            }
            SoakInterval interval = sampler.sample(false, paced);
            intervals.add(interval);
            progress(interval);
          } while (latencies.unpublished() > 0 && System.nanoTime() - deadline < 0);
          held = holder.held();
          indexRebuilds = rebuilds.done();
        }
        if (retentionAge != null) {
          // What retention would delete at the end: its backlog, if it fell behind.
          retentionDeleted = admin.purgeProcessed(retentionAge, retentionBatch);
        }
      } finally {
        relays.forEach(OutboxRelay::close);
        executors.forEach(ExecutorService::shutdownNow);
        created.forEach(Publisher::close);
      }

      SoakPhases phases = new SoakPhases(intervals, windows, healthyP99Millis);
      Histogram all = SoakPhases.merge(intervals);
      List<SoakInterval> writing = intervals.stream().filter(SoakInterval::writing).toList();
      long committed = written.values().stream().mapToLong(Integer::longValue).sum();
      Result result =
          new Result("soak")
              .put("rate", rate)
              .put("seconds", duration)
              .put("writers", writers)
              .put("aggregates", aggregates)
              .put("relays", relaysOptions.relays)
              .put("ordering", relaysOptions.ordering)
              .put("completion", relaysOptions.completion())
              .put("publisher", publishers.publisher)
              .put("retention", retentionAge == null ? null : retentionAge.toSeconds() + "s")
              .put("sample_seconds", sampleSeconds)
              .put("events", committed)
              .put("write_seconds", Result.round(writeSeconds, 3))
              .put("events_per_s", Result.round(committed / writeSeconds, 0))
              .put("p50_ms", Micros.millis(all, 50))
              .put("p99_ms", Micros.millis(all, 99))
              .put("max_ms", Micros.maxMillis(all))
              .put("p99_outside_holds_ms", phases.p99OutsideWindows())
              .put("kept_up", pendingAtEnd <= rate)
              .put("pending_at_end", pendingAtEnd)
              .put("max_pending", writing.stream().mapToLong(SoakInterval::pending).max().orElse(0))
              .put("drain_seconds", drainSeconds)
              .put(
                  "max_dead_tuples",
                  intervals.stream().mapToLong(i -> i.table().deadTuples()).max().orElse(0))
              .put("autovacuum_runs", autovacuumRuns(intervals))
              .put(
                  "table_bytes_ratio_last_half",
                  lastHalfRatio(writing, OutboxTableStats::tableBytes))
              .put(
                  "index_bytes_ratio_last_half",
                  lastHalfRatio(writing, OutboxTableStats::indexBytes))
              .put("retention_deleted_at_end", retentionAge == null ? null : retentionDeleted);
      if (rebuildPendingIndexes) {
        result.put("index_rebuilds", indexRebuilds);
      }
      deliveries.check(written).into(result);
      db.describe(result);
      List<Map<String, Object>> holds = phases.windows();
      for (int i = 0; i < holds.size() && i < held.size(); i++) {
        holds.get(i).putAll(held.get(i).toMap());
      }
      if (options.json) {
        result.put("holds", holds);
        result.put("intervals", intervals.stream().map(SoakInterval::toMap).toList());
        result.print(System.out, true);
      } else {
        printTable(System.out, intervals);
        for (Map<String, Object> hold : holds) {
          System.out.println("hold " + hold);
        }
        result.print(System.out, false);
      }
      return result.verified() && held.size() == windows.size() ? 0 : 1;
    }
  }

  private static void require(boolean condition, String message) {
    if (!condition) {
      throw new IllegalArgumentException(message);
    }
  }

  /** Autovacuum runs on the table over the run (a reset of the statistics counts from zero). */
  private static long autovacuumRuns(List<SoakInterval> intervals) {
    if (intervals.isEmpty()) {
      return 0;
    }
    return Math.max(
        0,
        intervals.getLast().table().autovacuumCount()
            - intervals.getFirst().table().autovacuumCount());
  }

  /** A size at the end of writing over the same size halfway through: growth in the last half. */
  private static @Nullable Double lastHalfRatio(
      List<SoakInterval> writing, java.util.function.ToLongFunction<OutboxTableStats> size) {
    if (writing.size() < 2) {
      return null;
    }
    long half = size.applyAsLong(writing.get((writing.size() - 1) / 2).table());
    long end = size.applyAsLong(writing.getLast().table());
    return half == 0 ? null : Result.round((double) end / half, 3);
  }

  private static final String ROW =
      "%7s %-5s %7s %8s %8s %9s %8s %9s %9s %9s %6s %9s %10s %10s %8s%n";

  private static void printTable(PrintStream out, List<SoakInterval> intervals) {
    out.printf(
        Locale.ROOT,
        ROW,
        "t_s",
        "hold",
        "events",
        "p50_ms",
        "p99_ms",
        "max_ms",
        "pending",
        "claim_p99",
        "dead_tup",
        "live_tup",
        "avac",
        "xact_s",
        "table_kB",
        "index_kB",
        "kept_up");
    intervals.forEach(i -> out.print(row(i)));
  }

  private static String row(SoakInterval i) {
    Map<String, Object> m = i.toMap();
    return String.format(
        Locale.ROOT,
        ROW,
        m.get("t_s"),
        i.holding() ? "xmin" : i.writing() ? "" : "drain",
        m.get("published"),
        m.get("p50_ms"),
        m.get("p99_ms"),
        m.get("max_ms"),
        m.get("pending"),
        m.get("claim_p99_ms"),
        m.get("dead_tuples"),
        m.get("live_tuples"),
        m.get("autovacuum_count"),
        m.get("oldest_xact_s"),
        i.table().tableBytes() / 1024,
        i.table().indexBytes() / 1024,
        m.get("kept_up"));
  }

  /** Each interval on stderr as it is taken, to watch a long run. */
  private static void progress(SoakInterval interval) {
    System.err.print("soak: " + row(interval));
  }

  /**
   * {@code --rebuild-pending-indexes}: once per window, at the first sample after it closed in
   * which the relays kept up, rebuilds the pending indexes on the housekeeping thread, so sampling
   * goes on meanwhile. With no windows it does nothing.
   */
  private static final class PendingIndexRebuilds {
    private final OutboxAdmin admin;
    private final ScheduledExecutorService executor;
    private final List<HoldWindow> windows;
    private final List<Map<String, Object>> done = new CopyOnWriteArrayList<>();
    private int handled;

    PendingIndexRebuilds(
        OutboxAdmin admin, ScheduledExecutorService executor, List<HoldWindow> windows) {
      this.admin = admin;
      this.executor = executor;
      this.windows = windows;
    }

    void afterSample(SoakInterval interval) {
      if (handled >= windows.size()
          || interval.endSeconds() <= windows.get(handled).endSeconds()
          || interval.holding()
          || !interval.keptUp()) {
        return;
      }
      handled++;
      double at = interval.endSeconds();
      executor.execute(
          () -> {
            long started = System.nanoTime();
            long freed = admin.rebuildPendingIndexes();
            Map<String, Object> rebuild = new LinkedHashMap<>();
            rebuild.put("t_s", Result.round(at, 3));
            rebuild.put("seconds", Result.round((System.nanoTime() - started) / 1e9, 3));
            rebuild.put("freed_bytes", freed);
            done.add(rebuild);
          });
    }

    List<Map<String, Object>> done() {
      return List.copyOf(done);
    }
  }

  /** Takes the samples: what the recorders gathered since the last one, and the table now. */
  private final class Sampler {
    private final OutboxAdmin admin;
    private final CommitToPublish latencies;
    private final Recorder batchTimes;
    private final Recorder claimTimes;
    private final List<HoldWindow> windows;
    private final long writeStart;
    private double last;
    private long committedBefore;

    Sampler(
        OutboxAdmin admin,
        CommitToPublish latencies,
        Recorder batchTimes,
        Recorder claimTimes,
        List<HoldWindow> windows,
        long writeStart) {
      this.windows = windows;
      this.admin = admin;
      this.latencies = latencies;
      this.batchTimes = batchTimes;
      this.claimTimes = claimTimes;
      this.writeStart = writeStart;
    }

    SoakInterval sample(boolean writing, PacedWriters paced) throws Exception {
      double now = (System.nanoTime() - writeStart) / 1e9;
      boolean holding =
          windows.stream().anyMatch(w -> last < w.endSeconds() && now > w.startSeconds());
      Histogram latency = latencies.interval();
      Histogram batches = BatchTimer.interval(batchTimes);
      Histogram claims = BatchTimer.interval(claimTimes);
      long committed = paced.committed();
      long queried = System.nanoTime();
      long pending = admin.pendingCount();
      Duration oldestPending = admin.oldestPendingAge();
      OutboxTableStats table = admin.tableStats();
      Duration oldestTransaction = admin.oldestTransactionAge();
      long sampleMillis = (System.nanoTime() - queried) / 1_000_000;
      SoakInterval interval =
          new SoakInterval(
              last,
              now,
              writing,
              holding,
              committed - committedBefore,
              latency,
              batches,
              claims,
              pending,
              oldestPending,
              pending <= rate,
              table,
              oldestTransaction,
              sampleMillis);
      last = now;
      committedBefore = committed;
      return interval;
    }
  }
}

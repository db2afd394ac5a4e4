package dev.pgoutbox.tools.bench;

import dev.pgoutbox.relay.Completion;
import dev.pgoutbox.relay.Ordering;
import dev.pgoutbox.relay.PublishTracing;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code bench drain}: relays drain a preloaded outbox; compared with the SQL-only ceiling. */
@Command(
    name = "drain",
    mixinStandardHelpOptions = true,
    description =
        "Preload --events over --aggregates, drain them with --relays relays, then run the"
            + " SQL-only ceiling (and, if asked, the naive relay and PostgreSQL's own loop) on"
            + " identical data and report the ratios.")
final class DrainCommand implements Callable<Integer> {

  @Mixin BenchOptions options;

  @Mixin DataOptions data;

  @Mixin RelayOptions relaysOptions;

  @Mixin TransportOption transport;

  @Mixin BenchPublishers publishers;

  @Option(
      names = "--source",
      defaultValue = "table",
      description =
          "table: drain with OutboxRelay; wal: drain with OutboxRelay and, on identical data, with"
              + " WalRelay from a logical replication slot (wal_events_per_s,"
              + " ratio_wal_to_drain, the outbox table's size before and after it:"
              + " wal_outbox_table_bytes_before, wal_outbox_table_bytes_after; the same data"
              + " streamed by a reader that only counts:"
              + " wal_stream_events_per_s, ratio_wal_to_wal_stream; and, unless --no-ceiling, the"
              + " decoding of the same data alone as bench ceiling --source wal does:"
              + " wal_ceiling_events_per_s, ratio_wal_to_wal_ceiling; needs wal_level=logical:"
              + " the embedded PostgreSQL is started with it) (default ${DEFAULT-VALUE})")
  String source = "table";

  @Option(names = "--no-ceiling", description = "Skip the ceiling run")
  boolean noCeiling;

  @Option(
      names = "--with-baseline",
      description =
          "Also run the continuous naive relay (bench baseline --continuous, same --relays and"
              + " --batch) on identical data: baseline_events_per_s, ratio_to_baseline")
  boolean withBaseline;

  @Option(
      names = "--with-batched-baseline",
      description =
          "Also run the naive relay with its per-row UPDATEs sent as one JDBC batch (bench"
              + " baseline --continuous --batched-marks) on identical data:"
              + " batched_baseline_events_per_s, ratio_to_batched_baseline")
  boolean withBatchedBaseline;

  @Option(
      names = "--with-limit",
      description =
          "Also run PostgreSQL's own loop (bench limit, --relays sessions, same --completion) on"
              + " identical data: limit_events_per_s, ratio_to_limit")
  boolean withLimit;

  @Option(
      names = "--with-tracing",
      description =
          "Give every event a stored traceparent and also drain with OpenTelemetry tracing, a span"
              + " per event exported through a batch span processor to a discarding exporter:"
              + " child of the stored context (traced_events_per_s, ratio_traced_to_drain) and"
              + " linked to it (linked_events_per_s, ratio_linked_to_drain)")
  boolean withTracing;

  @Option(
      names = "--tracing-bridge",
      defaultValue = "otel",
      description =
          "With --with-tracing: otel (the runs above), observation (the Micrometer Observation"
              + " bridge on micrometer-tracing over the same SDK, with a meter handler, spans"
              + " parented: observed_events_per_s, ratio_observed_to_drain) or both (default"
              + " ${DEFAULT-VALUE})")
  String tracingBridge;

  @Option(
      names = "--rounds",
      defaultValue = "1",
      description =
          "Run the drain and its yardsticks this many times, alternating their order (reversed"
              + " every other round), one line per round and then one with the median, min and"
              + " max of each rate and ratio (default ${DEFAULT-VALUE})")
  int rounds;

  @Option(
      names = "--warmup",
      description =
          "First drain the measured data (up to 100000 events) through every contender that runs"
              + " in this JVM (the relays, the naive relay, the ceiling, the tracing and WAL runs"
              + " asked for), unreported, again until a pass spends less than 5%% of its time"
              + " compiling or no less than the pass before (at most 5 passes), so each runs"
              + " JIT-compiled in every measured round: a JIT still compiling takes a core"
              + " PostgreSQL needs (warmup_passes; jit_compile_ms and baseline_jit_compile_ms say"
              + " how long the compilers ran during each measured run, its preload and check"
              + " included)")
  boolean warmup;

  /** Most warm-up passes. */
  static final int MAX_WARMUP_PASSES = 5;

  /** Most events a warm-up pass drains through each contender (the measured size up to this). */
  static final int WARMUP_EVENTS = 100_000;

  /** A warm-up pass that spent less than this share of its time compiling ends the warm-up. */
  static final double SETTLED_COMPILE_SHARE = 0.05;

  /**
   * A warm-up pass that compiled at least this share of what the pass before it compiled ends the
   * warm-up too: the JIT has reached the recompilations it keeps making whatever runs (measured:
   * with passes of 20,000 events, 4.3 s of compiling in the first pass, 1.2-1.3 s in the next
   * three, 0.6-0.8 s from the fifth on, of 3.2-3.5 s passes, the bench's preloads and schema resets
   * in every pass).
   */
  static final double PLATEAU_SHARE = 0.75;

  @Override
  public Integer call() throws Exception {
    Drains.Setup setup = setup(options, data, relaysOptions);
    if (rounds < 1) {
      throw new IllegalArgumentException("--rounds must be at least 1, was " + rounds);
    }
    if (!List.of("otel", "observation", "both").contains(tracingBridge)) {
      throw new IllegalArgumentException(
          "--tracing-bridge must be otel, observation or both, was " + tracingBridge);
    }
    boolean wal = isWal(source);
    if (transport.messages() && !wal) {
      throw new IllegalArgumentException("--transport messages needs --source wal");
    }
    if (wal && relaysOptions.relays != 1) {
      throw new IllegalArgumentException(
          "--source wal drains with one WAL relay beside --relays 1 table relay, was --relays "
              + relaysOptions.relays);
    }
    try (BenchDatabase db = BenchDatabase.open(options, wal);
        BenchPublishers.Session session = publishers.open()) {
      int warmupPasses = warmup ? warmUp(db, session, setup) : 0;
      List<Result> results = new ArrayList<>();
      boolean verified = true;
      for (int round = 1; round <= rounds; round++) {
        Result result = round(db, session, setup, round % 2 == 0);
        if (warmup) {
          result.put("warmup_passes", warmupPasses);
        }
        if (rounds > 1) {
          result.put("round", round);
        }
        db.describe(result);
        result.print(System.out, options.json);
        verified &= result.verified();
        results.add(result);
      }
      if (rounds > 1) {
        Result summary = Result.summarize("drain", results);
        summary.print(System.out, options.json);
      }
      return verified ? 0 : 1;
    }
  }

  /**
   * Drains the measured data (up to {@link #WARMUP_EVENTS}) through every contender that runs in
   * this JVM, pass after pass, until a pass spends less than {@link #SETTLED_COMPILE_SHARE} of its
   * time in the JIT compilers, or compiles about as much as the one before ({@link
   * #PLATEAU_SHARE}), or after {@link #MAX_WARMUP_PASSES}. One pass left the C2 compiler busy on
   * half a core during the next measured drain, time PostgreSQL lost on this two-core machine; the
   * naive relay was never warmed at all, which flattered the relay's ratio to it.
   *
   * @return the passes run
   */
  private int warmUp(BenchDatabase db, BenchPublishers.Session session, Drains.Setup setup)
      throws Exception {
    // The measured size, up to WARMUP_EVENTS: warmed on a fifth of the data, the first measured
    // round still spent 1.4 s compiling and drained 71,000 events/s against 110,000 in the next.
    int events = Math.min(setup.events(), WARMUP_EVENTS);
    Drains.Setup warm =
        new Drains.Setup(
            events,
            (int) Math.max(1, (long) setup.aggregates() * events / setup.events()),
            setup.relays(),
            setup.batch(),
            setup.ordering(),
            setup.completion(),
            setup.batchGiven(),
            setup.completionGiven());
    List<String> contenders = contenders();
    // PostgreSQL's own loop runs no code in this JVM.
    contenders.remove("limit");
    contenders.remove("wal_ceiling");
    contenders.remove("wal_stream");
    long lastCompiled = Long.MAX_VALUE;
    for (int pass = 1; ; pass++) {
      long compiledBefore = JitActivity.compileMillis();
      long started = System.nanoTime();
      for (String contender : contenders) {
        run(contender, db, session, warm);
      }
      long passMillis = Math.max(1, (System.nanoTime() - started) / 1_000_000);
      long compiled = JitActivity.compileMillis() - compiledBefore;
      boolean settled =
          compiled < SETTLED_COMPILE_SHARE * passMillis
              || (pass >= 2 && compiled >= PLATEAU_SHARE * lastCompiled);
      if (settled || pass >= MAX_WARMUP_PASSES || compiledBefore < 0) {
        return pass;
      }
      lastCompiled = compiled;
    }
  }

  /** The runs of a round: the drain first, then the yardsticks asked for. */
  private List<String> contenders() {
    List<String> order = new ArrayList<>(List.of("drain"));
    if (isWal(source)) {
      order.add("wal");
      order.add("wal_stream");
      if (transport.messages()) {
        order.add("wal_ceiling");
      }
    }
    if (!noCeiling) {
      order.add("ceiling");
      if (isWal(source)) {
        order.add("wal_ceiling");
      }
    }
    if (withBaseline) {
      order.add("baseline");
    }
    if (withBatchedBaseline) {
      order.add("batched_baseline");
    }
    if (withLimit) {
      order.add("limit");
    }
    if (withTracing && !tracingBridge.equals("observation")) {
      order.add("traced");
      order.add("linked");
    }
    if (withTracing && !tracingBridge.equals("otel")) {
      order.add("observed");
    }
    return order;
  }

  private Drains.Outcome run(
      String contender, BenchDatabase db, BenchPublishers.Session session, Drains.Setup setup)
      throws Exception {
    return switch (contender) {
      case "drain" -> Drains.relays(db, setup, session.factory(), PublishTracing.NONE, withTracing);
      case "traced" -> BenchTracing.drain(db, setup, session.factory(), false);
      case "linked" -> BenchTracing.drain(db, setup, session.factory(), true);
      case "observed" -> BenchTracing.observed(db, setup, session.factory());
      case "ceiling" -> Drains.ceiling(db, setup);
      case "wal" -> WalDrains.wal(db, setup, session.factory(), transport.value());
      case "wal_ceiling" -> WalDrains.walCeiling(db, setup, transport.value());
      case "wal_stream" -> WalDrains.walStream(db, setup, transport.value());
      case "baseline" -> Drains.baseline(db, setup, false);
      case "batched_baseline" -> Drains.baseline(db, setup, true);
      case "limit" -> Drains.limit(db, setup, setup.relays(), Drains.LIMIT_ROWS_PER_COMMIT);
      default -> throw new IllegalStateException("unknown contender " + contender);
    };
  }

  /** One drain and the yardsticks asked for, each on identical data, in order or reversed. */
  private Result round(
      BenchDatabase db, BenchPublishers.Session session, Drains.Setup setup, boolean reversed)
      throws Exception {
    Map<String, Drains.Outcome> outcomes = new LinkedHashMap<>();
    Map<String, Long> compileMillis = new LinkedHashMap<>();
    List<String> order = contenders();
    if (reversed) {
      Collections.reverse(order);
    }
    for (String contender : order) {
      long compiledBefore = JitActivity.compileMillis();
      outcomes.put(contender, run(contender, db, session, setup));
      compileMillis.put(contender, JitActivity.compileMillis() - compiledBefore);
    }
    Drains.Outcome drain = outcomes.get("drain");
    Result result = describe(new Result("drain"), setup).put("publisher", publishers.publisher);
    fill(result, drain);
    if (JitActivity.compileMillis() >= 0) {
      result.put("jit_compile_ms", compileMillis.get("drain"));
    }
    for (String traced : List.of("traced", "linked", "observed")) {
      Drains.Outcome outcome = outcomes.get(traced);
      if (outcome != null) {
        result.put(traced + "_events_per_s", Result.round(outcome.eventsPerSecond(), 0));
        result.put(
            "ratio_" + traced + "_to_drain",
            Result.round(outcome.eventsPerSecond() / drain.eventsPerSecond(), 3));
      }
    }
    Drains.Outcome wal = outcomes.get("wal");
    if (wal != null) {
      // The WAL relay's effective batch and completion: its own defaults unless given.
      result.put(
          "wal_batch",
          setup.batchGiven() ? setup.batch() : dev.pgoutbox.relay.wal.WalRelay.DEFAULT_BATCH_SIZE);
      Completion walCompletion =
          setup.completionGiven()
              ? setup.completion()
              : dev.pgoutbox.relay.wal.WalRelay.DEFAULT_COMPLETION;
      result.put("wal_completion", walCompletion == Completion.DELETE ? "delete" : "mark");
      result.put("wal_seconds", Result.round(wal.seconds(), 3));
      result.put("wal_events_per_s", Result.round(wal.eventsPerSecond(), 0));
      result.put(
          "ratio_wal_to_drain", Result.round(wal.eventsPerSecond() / drain.eventsPerSecond(), 3));
      Deliveries.Check check = wal.check();
      if (check != null) {
        check.into(result, "wal_");
      }
      result.put("wal_remaining", wal.remaining());
      // With the message transport the table holds only failures: its size should not move.
      result.put("wal_outbox_table_bytes_before", wal.tableBytesBefore());
      result.put("wal_outbox_table_bytes_after", wal.tableBytesAfter());
      result.put("transport", transport.label());
      Drains.Outcome walStream = outcomes.get("wal_stream");
      if (walStream != null) {
        // The WAL relay against a reader that only streams the same events: the replication
        // protocol's own limit, which the server's decoding alone (below) does not pay.
        result.put("wal_stream_events_per_s", Result.round(walStream.eventsPerSecond(), 0));
        result.put(
            "ratio_wal_to_wal_stream",
            Result.round(wal.eventsPerSecond() / walStream.eventsPerSecond(), 3));
      }
      Drains.Outcome walCeiling = outcomes.get("wal_ceiling");
      if (walCeiling != null) {
        // The WAL relay against the decoding of the same events alone (its own limit).
        result.put("wal_ceiling_events_per_s", Result.round(walCeiling.eventsPerSecond(), 0));
        result.put(
            "ratio_wal_to_wal_ceiling",
            Result.round(wal.eventsPerSecond() / walCeiling.eventsPerSecond(), 3));
      }
    }
    Drains.Outcome ceiling = outcomes.get("ceiling");
    if (ceiling != null) {
      result.put("ceiling_events_per_s", Result.round(ceiling.eventsPerSecond(), 0));
      result.put(
          "ratio_to_ceiling", Result.round(drain.eventsPerSecond() / ceiling.eventsPerSecond(), 3));
    }
    Drains.Outcome baseline = outcomes.get("baseline");
    if (baseline != null) {
      result.put("baseline_events_per_s", Result.round(baseline.eventsPerSecond(), 0));
      if (JitActivity.compileMillis() >= 0) {
        result.put("baseline_jit_compile_ms", compileMillis.get("baseline"));
      }
      result.put(
          "ratio_to_baseline",
          Result.round(drain.eventsPerSecond() / baseline.eventsPerSecond(), 3));
      // The naive relay promises no order: its reordering is reported, not a failure.
      Deliveries.Check check = baseline.check();
      if (check != null) {
        check.into(result, "baseline_");
      }
    }
    Drains.Outcome batched = outcomes.get("batched_baseline");
    if (batched != null) {
      result.put("batched_baseline_events_per_s", Result.round(batched.eventsPerSecond(), 0));
      result.put(
          "ratio_to_batched_baseline",
          Result.round(drain.eventsPerSecond() / batched.eventsPerSecond(), 3));
      Deliveries.Check check = batched.check();
      if (check != null) {
        check.into(result, "batched_baseline_");
      }
    }
    Drains.Outcome limit = outcomes.get("limit");
    if (limit != null) {
      result.put("limit_events_per_s", Result.round(limit.eventsPerSecond(), 0));
      result.put(
          "ratio_to_limit", Result.round(drain.eventsPerSecond() / limit.eventsPerSecond(), 3));
      result.put("limit_remaining", limit.remaining());
    }
    return result;
  }

  static Drains.Setup setup(BenchOptions options, DataOptions data, RelayOptions relays) {
    int n = data.events(options);
    int a = data.aggregates(options);
    if (n < 1 || a < 1 || relays.relays < 1 || data.batch() < 1 || data.batch() > 10_000) {
      throw new IllegalArgumentException(
          "--events, --aggregates and --relays must be at least 1, --batch between 1 and 10000");
    }
    return new Drains.Setup(
        n,
        a,
        relays.relays,
        data.batch(),
        orderingOf(relays.ordering),
        completionOf(relays.completion()),
        data.batch != null,
        relays.completion != null);
  }

  static boolean isWal(String source) {
    return switch (source) {
      case "table" -> false;
      case "wal" -> true;
      default -> throw new IllegalArgumentException("--source must be table or wal, was " + source);
    };
  }

  static Ordering orderingOf(String value) {
    return switch (value) {
      case "strict" -> Ordering.STRICT;
      case "unordered" -> Ordering.UNORDERED;
      default ->
          throw new IllegalArgumentException(
              "--ordering must be strict or unordered, was " + value);
    };
  }

  static Completion completionOf(String value) {
    return switch (value) {
      case "mark" -> Completion.MARK_PROCESSED;
      case "delete" -> Completion.DELETE;
      default ->
          throw new IllegalArgumentException("--completion must be mark or delete, was " + value);
    };
  }

  static Result describe(Result result, Drains.Setup setup) {
    return result
        .put("events", setup.events())
        .put("aggregates", setup.aggregates())
        .put("relays", setup.relays())
        .put("batch", setup.batch())
        .put("ordering", setup.ordering().name().toLowerCase(java.util.Locale.ROOT))
        .put("completion", setup.completion() == Completion.DELETE ? "delete" : "mark");
  }

  static void fill(Result result, Drains.Outcome outcome) {
    result
        .put("seconds", Result.round(outcome.seconds(), 3))
        .put("events_per_s", Result.round(outcome.eventsPerSecond(), 0));
    Deliveries.Check check = outcome.check();
    if (check != null) {
      check.into(result);
    }
    result.put("remaining", outcome.remaining());
  }
}

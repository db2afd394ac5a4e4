package dev.pgoutbox.example.bench;

import dev.pgoutbox.relay.Completion;
import dev.pgoutbox.relay.Ordering;
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

  @Mixin BenchPublishers publishers;

  @Option(names = "--no-ceiling", description = "Skip the ceiling run")
  boolean noCeiling;

  @Option(
      names = "--with-baseline",
      description =
          "Also run the continuous naive relay (bench baseline --continuous, same --relays and"
              + " --batch) on identical data: baseline_events_per_s, ratio_to_baseline")
  boolean withBaseline;

  @Option(
      names = "--with-limit",
      description =
          "Also run PostgreSQL's own loop (bench limit, --relays sessions, same --completion) on"
              + " identical data: limit_events_per_s, ratio_to_limit")
  boolean withLimit;

  @Override
  public Integer call() throws Exception {
    Drains.Setup setup = setup(options, data, relaysOptions);
    try (BenchDatabase db = BenchDatabase.open(options);
        BenchPublishers.Session session = publishers.open()) {
      Drains.Outcome drain = Drains.relays(db, setup, session.factory());
      Result result = describe(new Result("drain"), setup).put("publisher", publishers.publisher);
      fill(result, drain);
      if (!noCeiling) {
        Drains.Outcome ceiling = Drains.ceiling(db, setup);
        result.put("ceiling_events_per_s", Result.round(ceiling.eventsPerSecond(), 0));
        result.put(
            "ratio_to_ceiling",
            Result.round(drain.eventsPerSecond() / ceiling.eventsPerSecond(), 3));
      }
      if (withBaseline) {
        Drains.Outcome baseline = Drains.baseline(db, setup);
        result.put("baseline_events_per_s", Result.round(baseline.eventsPerSecond(), 0));
        result.put(
            "ratio_to_baseline",
            Result.round(drain.eventsPerSecond() / baseline.eventsPerSecond(), 3));
        // The naive relay promises no order: its reordering is reported, not a failure.
        Deliveries.Check check = baseline.check();
        if (check != null) {
          check.into(result, "baseline_");
        }
      }
      if (withLimit) {
        Drains.Outcome limit =
            Drains.limit(db, setup, setup.relays(), Drains.LIMIT_ROWS_PER_COMMIT);
        result.put("limit_events_per_s", Result.round(limit.eventsPerSecond(), 0));
        result.put(
            "ratio_to_limit", Result.round(drain.eventsPerSecond() / limit.eventsPerSecond(), 3));
        result.put("limit_remaining", limit.remaining());
      }
      db.describe(result);
      result.print(System.out, options.json);
      return result.verified() ? 0 : 1;
    }
  }

  static Drains.Setup setup(BenchOptions options, DataOptions data, RelayOptions relays) {
    int n = data.events(options);
    int a = data.aggregates(options);
    if (n < 1 || a < 1 || relays.relays < 1 || data.batch < 1 || data.batch > 10_000) {
      throw new IllegalArgumentException(
          "--events, --aggregates and --relays must be at least 1, --batch between 1 and 10000");
    }
    return new Drains.Setup(
        n,
        a,
        relays.relays,
        data.batch,
        orderingOf(relays.ordering),
        completionOf(relays.completion));
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

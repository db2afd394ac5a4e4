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
            + " SQL-only ceiling on identical data and report ratio_to_ceiling.")
final class DrainCommand implements Callable<Integer> {

  @Mixin BenchOptions options;

  @Mixin DataOptions data;

  @Mixin RelayOptions relaysOptions;

  @Mixin BenchPublishers publishers;

  @Option(names = "--no-ceiling", description = "Skip the ceiling run")
  boolean noCeiling;

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
    outcome.check().into(result);
  }
}

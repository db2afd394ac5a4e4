package dev.pgoutbox.tools.bench;

import dev.pgoutbox.relay.Completion;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code bench limit}: PostgreSQL alone completing drain's preloaded events with a server-side
 * loop, no client per row (see {@link Drains#limit}): the bound a relay is measured against.
 */
@Command(
    name = "limit",
    mixinStandardHelpOptions = true,
    description =
        "Preload like drain, then --sessions sessions each run a PL/pgSQL loop marking (or"
            + " deleting) the oldest --rows-per-commit pending rows per commit: limit_events_per_s.")
final class LimitCommand implements Callable<Integer> {

  @Mixin BenchOptions options;

  @Option(names = "--events", description = "Events to preload (default 200000; --quick 5000)")
  Integer events;

  @Option(names = "--aggregates", description = "Aggregates (default 20000; --quick 500)")
  Integer aggregates;

  @Option(
      names = "--rows-per-commit",
      defaultValue = "1000",
      description = "Rows each statement completes before its commit (default ${DEFAULT-VALUE})")
  int rowsPerCommit;

  @Option(
      names = "--sessions",
      defaultValue = "2",
      description = "Concurrent sessions running the loop (default ${DEFAULT-VALUE})")
  int sessions;

  @Option(
      names = "--completion",
      defaultValue = "mark",
      description = "mark (UPDATE ... SET processed_at) or delete (default ${DEFAULT-VALUE})")
  String completion;

  @Override
  public Integer call() throws Exception {
    if (sessions < 1) {
      throw new IllegalArgumentException("--sessions must be at least 1, was " + sessions);
    }
    if (rowsPerCommit < 1 || rowsPerCommit > 10_000) {
      throw new IllegalArgumentException(
          "--rows-per-commit must be between 1 and 10000, was " + rowsPerCommit);
    }
    DataOptions data = new DataOptions();
    data.batch = rowsPerCommit;
    data.events = events;
    data.aggregates = aggregates;
    RelayOptions relayOptions = new RelayOptions();
    relayOptions.completion = completion;
    Drains.Setup setup = DrainCommand.setup(options, data, relayOptions);
    try (BenchDatabase db = BenchDatabase.open(options)) {
      Drains.Outcome outcome = Drains.limit(db, setup, sessions, rowsPerCommit);
      Result result =
          new Result("limit")
              .put("events", setup.events())
              .put("aggregates", setup.aggregates())
              .put("sessions", sessions)
              .put("rows_per_commit", rowsPerCommit)
              .put("completion", setup.completion() == Completion.DELETE ? "delete" : "mark")
              .put("completed", outcome.events())
              .put("remaining", outcome.remaining())
              .put("seconds", Result.round(outcome.seconds(), 3))
              .put("limit_events_per_s", Result.round(outcome.eventsPerSecond(), 0));
      db.describe(result);
      result.print(System.out, options.json);
      return outcome.remaining() == 0 ? 0 : 1;
    }
  }
}

package dev.pgoutbox.example.bench;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code bench ceiling}: the relay's claim and mark statements alone, in a tight loop. */
@Command(
    name = "ceiling",
    mixinStandardHelpOptions = true,
    description =
        "Preload like drain, then drain with the relay's claim and mark statements in a tight"
            + " loop (one connection per relay, no Java-side work): the PostgreSQL ceiling.")
final class CeilingCommand implements Callable<Integer> {

  @Mixin BenchOptions options;

  @Option(names = "--events", description = "Events to preload (default 200000; --quick 5000)")
  Integer events;

  @Option(names = "--aggregates", description = "Aggregates (default 20000; --quick 500)")
  Integer aggregates;

  @Option(
      names = "--relays",
      defaultValue = "1",
      description = "Connections (default ${DEFAULT-VALUE})")
  int relays;

  @Option(
      names = "--batch",
      defaultValue = "200",
      description = "Batch size (default ${DEFAULT-VALUE})")
  int batch;

  @Option(names = "--ordering", defaultValue = "strict", description = "strict or unordered")
  String ordering;

  @Option(names = "--completion", defaultValue = "mark", description = "mark or delete")
  String completion;

  @Override
  public Integer call() throws Exception {
    Drains.Setup setup =
        DrainCommand.setup(options, events, aggregates, relays, batch, ordering, completion);
    try (BenchDatabase db = BenchDatabase.open(options)) {
      Drains.Outcome outcome = Drains.ceiling(db, setup);
      Result result = DrainCommand.describe(new Result("ceiling"), setup);
      DrainCommand.fill(result, outcome);
      db.describe(result);
      result.print(System.out, options.json);
      return result.verified() ? 0 : 1;
    }
  }
}

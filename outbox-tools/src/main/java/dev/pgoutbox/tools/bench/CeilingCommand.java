package dev.pgoutbox.tools.bench;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/** {@code bench ceiling}: the relay's claim and mark statements alone, in a tight loop. */
@Command(
    name = "ceiling",
    mixinStandardHelpOptions = true,
    description =
        "Preload like drain, then drain with the relay's claim and mark statements in a tight"
            + " loop (one connection per relay, no Java-side work): the PostgreSQL ceiling.")
final class CeilingCommand implements Callable<Integer> {

  @Mixin BenchOptions options;

  @Mixin DataOptions data;

  @Mixin RelayOptions relays;

  @Override
  public Integer call() throws Exception {
    Drains.Setup setup = DrainCommand.setup(options, data, relays);
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

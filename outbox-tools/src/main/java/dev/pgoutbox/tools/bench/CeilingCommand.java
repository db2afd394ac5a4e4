package dev.pgoutbox.tools.bench;

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
            + " loop (one connection per relay, no Java-side work): the PostgreSQL ceiling. With"
            + " --source wal, the decoding of the same inserts alone.")
final class CeilingCommand implements Callable<Integer> {

  @Mixin BenchOptions options;

  @Mixin DataOptions data;

  @Mixin RelayOptions relays;

  @Mixin TransportOption transport;

  @Option(
      names = "--source",
      defaultValue = "table",
      description =
          "table: the claim and mark statements; wal: decoding alone, one"
              + " pg_logical_slot_get_binary_changes call over the preloaded inserts through"
              + " pgoutput (needs wal_level=logical; the embedded PostgreSQL is started with it)"
              + " (default ${DEFAULT-VALUE})")
  String source = "table";

  @Override
  public Integer call() throws Exception {
    Drains.Setup setup = DrainCommand.setup(options, data, relays);
    boolean wal = DrainCommand.isWal(source);
    try (BenchDatabase db = BenchDatabase.open(options, wal)) {
      if (transport.messages() && !wal) {
        throw new IllegalArgumentException("--transport messages needs --source wal");
      }
      Drains.Outcome outcome =
          wal ? WalDrains.walCeiling(db, setup, transport.value()) : Drains.ceiling(db, setup);
      Result result =
          DrainCommand.describe(new Result("ceiling"), setup)
              .put("source", source)
              .put("transport", transport.label());
      if (wal) {
        // Decoding leaves the rows pending by design: what is checked is that every insert was
        // decoded.
        result
            .put("seconds", Result.round(outcome.seconds(), 3))
            .put("events_per_s", Result.round(outcome.eventsPerSecond(), 0))
            .put("decoded", outcome.events());
        db.describe(result);
        result.print(System.out, options.json);
        return outcome.events() == setup.events() ? 0 : 1;
      }
      DrainCommand.fill(result, outcome);
      db.describe(result);
      result.print(System.out, options.json);
      return result.verified() ? 0 : 1;
    }
  }
}

package dev.pgoutbox.tools.bench;

import picocli.CommandLine.Option;

/** The preloaded outbox a drain-like scenario works on, and its batch size. */
public final class DataOptions {

  @Option(names = "--events", description = "Events to preload (default 200000; --quick 5000)")
  Integer events;

  @Option(names = "--aggregates", description = "Aggregates (default 20000; --quick 500)")
  Integer aggregates;

  @Option(
      names = "--batch",
      description =
          "Batch size (default 200; the WAL relay of --source wal: its own default, 2000, unless"
              + " given)")
  Integer batch;

  int batch() {
    return batch != null ? batch : 200;
  }

  int events(BenchOptions options) {
    return events != null ? events : options.quick ? 5_000 : 200_000;
  }

  int aggregates(BenchOptions options) {
    return aggregates != null ? aggregates : options.quick ? 500 : 20_000;
  }
}

package dev.pgoutbox.tools.bench;

import picocli.CommandLine.Option;

/** Options every scenario takes. */
public final class BenchOptions {

  @Option(
      names = "--jdbc-url",
      description =
          "PostgreSQL to measure (default: $PGOUTBOX_BENCH_JDBC_URL, else an embedded PostgreSQL)")
  String jdbcUrl;

  @Option(
      names = "--schema",
      defaultValue = "pgoutbox_bench",
      description = "Schema the scenario (re)creates and works in (default: ${DEFAULT-VALUE})")
  String schema;

  @Option(names = "--json", description = "Print one JSON object per result line")
  boolean json;

  @Option(names = "--quick", description = "Small sizes, for smoke runs")
  boolean quick;
}

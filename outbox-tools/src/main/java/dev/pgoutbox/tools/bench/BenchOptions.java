package dev.pgoutbox.tools.bench;

import java.util.LinkedHashMap;
import java.util.Map;
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

  @Option(
      names = "--pg-setting",
      paramLabel = "NAME=VALUE",
      description =
          "A server setting for the embedded PostgreSQL, repeatable (refused with --jdbc-url),"
              + " e.g. to log the plans of slow statements: --pg-setting"
              + " shared_preload_libraries=auto_explain --pg-setting"
              + " auto_explain.log_min_duration=1000 --pg-setting logging_collector=on"
              + " --pg-setting log_directory=/tmp/pglog")
  Map<String, String> pgSettings = new LinkedHashMap<>();
}

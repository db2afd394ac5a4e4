package dev.pgoutbox.tools.bench;

import dev.pgoutbox.relay.ClaimProbe;
import dev.pgoutbox.relay.DeadLetterPolicy;
import dev.pgoutbox.relay.Ordering;
import dev.pgoutbox.relay.RelayConfig;
import java.sql.Connection;
import java.util.concurrent.Callable;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code bench history}: the claim's latency with no processed history, then with millions of
 * processed rows in the same table. The partial indexes should make them equal.
 */
@Command(
    name = "history",
    mixinStandardHelpOptions = true,
    description =
        "Claim latency on --pending pending events with an empty history vs --history processed"
            + " rows; reports the ratio.")
final class HistoryCommand implements Callable<Integer> {

  @Mixin BenchOptions options;

  @Option(names = "--history", description = "Processed rows (default 2000000; --quick 50000)")
  Integer history;

  @Option(names = "--pending", description = "Pending events (default 20000; --quick 2000)")
  Integer pending;

  @Option(names = "--aggregates", description = "Aggregates of the pending events (default 2000)")
  Integer aggregates;

  @Option(
      names = "--batch",
      defaultValue = "200",
      description = "Batch size (default ${DEFAULT-VALUE})")
  int batch;

  @Option(
      names = "--claims",
      defaultValue = "300",
      description = "Claims measured (default ${DEFAULT-VALUE})")
  int claims;

  @Override
  public Integer call() throws Exception {
    int historyRows = history != null ? history : options.quick ? 50_000 : 2_000_000;
    int pendingRows = pending != null ? pending : options.quick ? 2_000 : 20_000;
    int aggregateCount = aggregates != null ? aggregates : options.quick ? 200 : 2_000;
    try (BenchDatabase db = BenchDatabase.open(options)) {
      db.resetSchema();
      db.preload(pendingRows, aggregateCount);
      db.execute("VACUUM ANALYZE outbox_events");
      Histogram empty = measure(db);

      db.resetSchema();
      // History first, as in life: processed rows are older than the pending ones.
      db.execute(
          "INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload,"
              + " created_at, processed_at) SELECT 'order', 'old-' || (i % 100000), 'order.step',"
              + " '{\"old\": true}', now() - interval '1 day', now() - interval '1 day'"
              + " FROM generate_series(1, "
              + historyRows
              + ") AS i");
      db.preload(pendingRows, aggregateCount);
      db.execute("VACUUM ANALYZE outbox_events");
      Histogram full = measure(db);

      double p50Empty = empty.getValueAtPercentile(50) / 1000.0;
      double p50Full = full.getValueAtPercentile(50) / 1000.0;
      Result result =
          new Result("history")
              .put("history", historyRows)
              .put("pending", pendingRows)
              .put("aggregates", aggregateCount)
              .put("batch", batch)
              .put("claims", claims)
              .put("p50_ms_empty", Result.round(p50Empty, 3))
              .put("p99_ms_empty", Result.round(empty.getValueAtPercentile(99) / 1000.0, 3))
              .put("p50_ms", Result.round(p50Full, 3))
              .put("p99_ms", Result.round(full.getValueAtPercentile(99) / 1000.0, 3))
              .put("max_ms", Result.round(full.getMaxValue() / 1000.0, 3))
              .put("ratio_history_to_empty", Result.round(p50Full / p50Empty, 3));
      // Claims are rolled back and nothing is delivered: no lost/reordered/duplicates to report.
      db.describe(result);
      result.print(System.out, options.json);
      return 0;
    }
  }

  /**
   * Claims a batch and rolls back, {@code claims} times; microseconds per claim (the relay's
   * transaction settings and its claim statement, one round trip each).
   */
  private Histogram measure(BenchDatabase db) throws Exception {
    Histogram histogram = new Histogram(3_600_000_000L, 3);
    RelayConfig config =
        RelayConfig.builder()
            .batchSize(batch)
            .ordering(Ordering.STRICT)
            .deadLetterPolicy(DeadLetterPolicy.HOLD_AGGREGATE)
            .build();
    try (Connection connection = db.connect()) {
      connection.setAutoCommit(false);
      for (int i = 0; i < claims + 20; i++) {
        ClaimProbe probe =
            ClaimProbe.builder().name("history").schema(db.schema()).config(config).build();
        long start = System.nanoTime();
        int claimed = probe.claim(connection);
        long micros = (System.nanoTime() - start) / 1000;
        connection.rollback();
        if (claimed == 0) {
          throw new IllegalStateException("nothing to claim: the preload failed");
        }
        if (i >= 20) { // the first claims warm caches and plans
          histogram.recordValue(Math.max(1, micros));
        }
      }
    }
    return histogram;
  }
}

package dev.pgoutbox.tools.bench;

import dev.pgoutbox.relay.OutboxTableStats;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.HdrHistogram.Histogram;

/**
 * One sample of a soak: what was published in the interval that ends at {@code endSeconds} (after
 * writing began), and the outbox table as PostgreSQL saw it then.
 */
record SoakInterval(
    double startSeconds,
    double endSeconds,
    boolean writing,
    boolean holding,
    long committed,
    Histogram latency,
    Histogram batches,
    Histogram claims,
    long pending,
    Duration oldestPendingAge,
    boolean keptUp,
    OutboxTableStats table,
    Duration oldestTransactionAge,
    long sampleMillis) {

  /** Whether the interval meets the soak's goal: p99 within {@code p99Millis}, and kept up. */
  boolean healthy(double p99Millis) {
    return keptUp && Micros.millis(latency, 99) <= p99Millis;
  }

  /** The interval's JSON object; {@code t_s} is its end. */
  Map<String, Object> toMap() {
    Map<String, Object> map = new LinkedHashMap<>();
    // Milliseconds: the sample after writing can end within a tenth of a second of the last one.
    map.put("t_s", Result.round(endSeconds, 3));
    map.put("phase", writing ? "writing" : "draining");
    map.put("holding_xmin", holding);
    map.put("committed", committed);
    map.put("published", latency.getTotalCount());
    map.put("p50_ms", Micros.millis(latency, 50));
    map.put("p99_ms", Micros.millis(latency, 99));
    map.put("max_ms", Micros.maxMillis(latency));
    map.put("batches", batches.getTotalCount());
    map.put("batch_p99_ms", Micros.millis(batches, 99));
    map.put("batch_max_ms", Micros.maxMillis(batches));
    map.put("claim_p50_ms", Micros.millis(claims, 50));
    map.put("claim_p99_ms", Micros.millis(claims, 99));
    map.put("claim_max_ms", Micros.maxMillis(claims));
    map.put("pending", pending);
    map.put("oldest_pending_ms", oldestPendingAge.toMillis());
    map.put("kept_up", keptUp);
    map.put("dead_tuples", table.deadTuples());
    map.put("live_tuples", table.liveTuples());
    map.put("dead_tuple_ratio", Result.round(table.deadTupleRatio(), 3));
    map.put("autovacuum_count", table.autovacuumCount());
    map.put("table_bytes", table.tableBytes());
    map.put("index_bytes", table.indexBytes());
    map.put("pending_index_bytes", table.pendingIndexBytes());
    map.put("oldest_xact_s", Result.round(oldestTransactionAge.toMillis() / 1000.0, 1));
    map.put("sample_ms", sampleMillis);
    return map;
  }
}

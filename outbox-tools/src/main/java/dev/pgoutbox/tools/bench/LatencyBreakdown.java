package dev.pgoutbox.tools.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.ToLongFunction;
import org.HdrHistogram.Histogram;
import org.jspecify.annotations.Nullable;

/**
 * Where one relay's commit-to-publish time goes: each event's time is split at the start of the
 * batch that published it.
 *
 * <ul>
 *   <li>{@code wait}: from the writer's commit to the start of that batch's claim. For an event
 *       committed while the relay was idle it is the wake-up (the notification's way to the relay
 *       and the relay thread's way onto a core); for one committed while a batch ran, the rest of
 *       that batch as well.
 *   <li>{@code claim}: from the claim's start to the publisher's call (the claim statement and
 *       reading its rows).
 * </ul>
 *
 * <p>Batches are recorded from the relay's {@code onBatch} report (its duration runs from claim to
 * commit), so one relay's batches never overlap and each publish falls in exactly one. Only for one
 * relay: with several, a publish time does not tell whose batch it was.
 */
final class LatencyBreakdown {

  private final List<long[]> batches = new ArrayList<>();

  /** Records a batch that ends now and took {@code duration} from claim to commit. */
  synchronized void onBatch(Duration duration) {
    long end = System.nanoTime();
    batches.add(new long[] {end - duration.toNanos(), end});
  }

  /**
   * Adds the breakdown of every published event to {@code result}: {@code wait_p50_ms}, {@code
   * wait_p99_ms}, {@code claim_p50_ms}, {@code claim_p99_ms}, {@code committed_during_batch_pct},
   * and, for the slowest 1% of events, the mean of each part ({@code slowest_1pct_wait_ms}, {@code
   * slowest_1pct_claim_ms}) and the share of them committed while a batch ran ({@code
   * slowest_1pct_committed_during_batch_pct}).
   */
  synchronized void into(Result result, Map<UUID, Long> committedAt, Map<UUID, Long> publishedAt) {
    List<long[]> sorted = new ArrayList<>(batches);
    sorted.sort(Comparator.comparingLong(b -> b[0]));
    List<Split> splits = new ArrayList<>();
    for (Map.Entry<UUID, Long> commit : committedAt.entrySet()) {
      Long published = publishedAt.get(commit.getKey());
      if (published == null) {
        continue;
      }
      long[] batch = containing(sorted, published);
      if (batch == null) {
        continue;
      }
      long committed = commit.getValue();
      long claimStart = Math.max(batch[0], committed);
      splits.add(
          new Split(
              published - committed,
              claimStart - committed,
              published - claimStart,
              containing(sorted, committed) != null));
    }
    if (splits.isEmpty()) {
      return;
    }
    Histogram waits = new Histogram(3_600_000_000L, 3);
    Histogram claims = new Histogram(3_600_000_000L, 3);
    long duringBatch = 0;
    for (Split split : splits) {
      waits.recordValue(Math.max(1, split.waitNanos / 1000));
      claims.recordValue(Math.max(1, split.claimNanos / 1000));
      duringBatch += split.committedDuringBatch ? 1 : 0;
    }
    splits.sort(Comparator.comparingLong(Split::totalNanos).reversed());
    List<Split> slowest = splits.subList(0, Math.max(1, splits.size() / 100));
    result
        .put("breakdown_events", splits.size())
        .put("wait_p50_ms", Result.round(waits.getValueAtPercentile(50) / 1000.0, 3))
        .put("wait_p99_ms", Result.round(waits.getValueAtPercentile(99) / 1000.0, 3))
        .put("claim_p50_ms", Result.round(claims.getValueAtPercentile(50) / 1000.0, 3))
        .put("claim_p99_ms", Result.round(claims.getValueAtPercentile(99) / 1000.0, 3))
        .put("committed_during_batch_pct", Result.round(100.0 * duringBatch / splits.size(), 1))
        .put("slowest_1pct_total_ms", meanMillis(slowest, Split::totalNanos))
        .put("slowest_1pct_wait_ms", meanMillis(slowest, Split::waitNanos))
        .put("slowest_1pct_claim_ms", meanMillis(slowest, Split::claimNanos))
        .put(
            "slowest_1pct_committed_during_batch_pct",
            Result.round(
                100.0
                    * slowest.stream().filter(Split::committedDuringBatch).count()
                    / slowest.size(),
                1));
  }

  private static double meanMillis(List<Split> splits, ToLongFunction<Split> f) {
    return Result.round(splits.stream().mapToLong(f).average().orElse(0) / 1e6, 3);
  }

  /** The batch whose claim-to-commit interval holds {@code nanos}, or null. */
  private static long @Nullable [] containing(List<long[]> sorted, long nanos) {
    int lo = 0;
    int hi = sorted.size() - 1;
    long @Nullable [] found = null;
    while (lo <= hi) {
      int mid = (lo + hi) >>> 1;
      if (sorted.get(mid)[0] <= nanos) {
        found = sorted.get(mid);
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    return found != null && nanos <= found[1] ? found : null;
  }

  private record Split(
      long totalNanos, long waitNanos, long claimNanos, boolean committedDuringBatch) {}
}

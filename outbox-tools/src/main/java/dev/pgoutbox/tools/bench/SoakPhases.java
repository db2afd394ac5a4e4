package dev.pgoutbox.tools.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import org.HdrHistogram.Histogram;
import org.jspecify.annotations.Nullable;

/**
 * A soak's latency around its hold windows, from the intervals taken while writing. For each
 * window:
 *
 * <ul>
 *   <li>{@code during}: the intervals that overlap it;
 *   <li>{@code recovering}: the intervals after it up to the last one that missed the goal (p99
 *       above {@code --healthy-p99-ms}, or pending above one second of writes) before the next
 *       window; {@code recovery_s} runs from the window's close to that interval's end, 0 when the
 *       first interval after the window already met the goal, null when no interval after it did;
 *   <li>{@code caught_up_s} and {@code first_healthy_s}: from the window's close to the end of the
 *       first interval after it that kept up (pending within one second of writes), and to the end
 *       of the first that met the goal; null when none did. Single slow intervals later on do not
 *       move them, as they move {@code recovery_s};
 *   <li>{@code after}: the intervals from there to the next window (or the end of writing);
 *   <li>{@code before}: the intervals between the previous window's recovery (or the start) and it.
 * </ul>
 *
 * Outside the windows means before and after: the intervals neither overlapping a window nor
 * recovering from one. Times have the resolution of the sampling interval.
 */
final class SoakPhases {

  private final List<SoakInterval> intervals;
  private final List<HoldWindow> windows;
  private final double healthyP99Millis;

  SoakPhases(List<SoakInterval> intervals, List<HoldWindow> windows, double healthyP99Millis) {
    this.intervals = intervals.stream().filter(SoakInterval::writing).toList();
    this.windows = windows;
    this.healthyP99Millis = healthyP99Millis;
  }

  /** One object per window: p99 before, during, recovering and after, and the recovery time. */
  List<Map<String, Object>> windows() {
    List<Map<String, Object>> out = new ArrayList<>();
    double from = 0;
    for (int w = 0; w < windows.size(); w++) {
      HoldWindow window = windows.get(w);
      double start = window.startSeconds();
      double end = window.endSeconds();
      double next = w + 1 < windows.size() ? windows.get(w + 1).startSeconds() : Double.MAX_VALUE;
      List<SoakInterval> before = new ArrayList<>();
      List<SoakInterval> during = new ArrayList<>();
      List<SoakInterval> following = new ArrayList<>();
      for (SoakInterval interval : intervals) {
        if (overlaps(interval, start, end)) {
          during.add(interval);
        } else if (interval.endSeconds() <= start && interval.startSeconds() >= from) {
          before.add(interval);
        } else if (interval.startSeconds() >= end && interval.endSeconds() <= next) {
          following.add(interval);
        }
      }
      int lastUnhealthy = -1;
      for (int i = 0; i < following.size(); i++) {
        if (!following.get(i).healthy(healthyP99Millis)) {
          lastUnhealthy = i;
        }
      }
      List<SoakInterval> recovering = following.subList(0, lastUnhealthy + 1);
      List<SoakInterval> after = following.subList(lastUnhealthy + 1, following.size());
      @Nullable Double recovery = null;
      if (!after.isEmpty()) {
        recovery = lastUnhealthy < 0 ? 0.0 : secondsAfter(end, recovering.getLast());
      }
      Map<String, Object> map = new LinkedHashMap<>();
      map.put("start_s", window.startSeconds());
      map.put("seconds", window.seconds());
      map.put("p99_before_ms", p99(before));
      map.put("p99_during_ms", p99(during));
      map.put("max_during_ms", max(during));
      map.put("p99_recovering_ms", p99(recovering));
      map.put("p99_after_ms", p99(after));
      map.put("recovery_s", recovery);
      map.put("caught_up_s", firstAfter(following, end, SoakInterval::keptUp));
      map.put("first_healthy_s", firstAfter(following, end, i -> i.healthy(healthyP99Millis)));
      map.put("max_pending_during", maxPending(during, recovering));
      map.put("max_dead_tuples", maxDeadTuples(during, recovering));
      out.add(map);
      from = after.isEmpty() ? next : after.getFirst().startSeconds();
    }
    return out;
  }

  /** p99 of every writing interval that neither overlaps a window nor recovers from one. */
  @Nullable Double p99OutsideWindows() {
    List<SoakInterval> outside = new ArrayList<>();
    for (SoakInterval interval : intervals) {
      if (windows.stream().noneMatch(w -> overlaps(interval, w.startSeconds(), w.endSeconds()))) {
        outside.add(interval);
      }
    }
    for (Map<String, Object> window : windows()) {
      double end =
          ((Number) window.get("start_s")).doubleValue()
              + ((Number) window.get("seconds")).doubleValue();
      Object recovery = window.get("recovery_s");
      double recovered = recovery == null ? Double.MAX_VALUE : end + (Double) recovery;
      outside.removeIf(i -> i.startSeconds() >= end && i.endSeconds() <= recovered);
    }
    return p99(outside);
  }

  /** Seconds from {@code end} to the end of the first of {@code following} that passes. */
  private static @Nullable Double firstAfter(
      List<SoakInterval> following, double end, Predicate<SoakInterval> passes) {
    for (SoakInterval interval : following) {
      if (passes.test(interval)) {
        return secondsAfter(end, interval);
      }
    }
    return null;
  }

  /** Seconds from {@code end} to the end of {@code interval}, at one decimal. */
  private static double secondsAfter(double end, SoakInterval interval) {
    return Result.round(Math.max(0, interval.endSeconds() - end), 1);
  }

  private static boolean overlaps(SoakInterval interval, double start, double end) {
    return interval.startSeconds() < end && interval.endSeconds() > start;
  }

  private static @Nullable Double p99(List<SoakInterval> intervals) {
    Histogram merged = merge(intervals);
    return merged.getTotalCount() == 0 ? null : Micros.millis(merged, 99);
  }

  private static @Nullable Double max(List<SoakInterval> intervals) {
    Histogram merged = merge(intervals);
    return merged.getTotalCount() == 0 ? null : Micros.maxMillis(merged);
  }

  static Histogram merge(List<SoakInterval> intervals) {
    Histogram merged = Micros.histogram();
    intervals.forEach(i -> merged.add(i.latency()));
    return merged;
  }

  @SafeVarargs
  private static long maxPending(List<SoakInterval>... lists) {
    long max = 0;
    for (List<SoakInterval> list : lists) {
      for (SoakInterval i : list) {
        max = Math.max(max, i.pending());
      }
    }
    return max;
  }

  @SafeVarargs
  private static long maxDeadTuples(List<SoakInterval>... lists) {
    long max = 0;
    for (List<SoakInterval> list : lists) {
      for (SoakInterval i : list) {
        max = Math.max(max, i.table().deadTuples());
      }
    }
    return max;
  }
}

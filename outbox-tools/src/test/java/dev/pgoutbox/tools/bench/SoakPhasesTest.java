package dev.pgoutbox.tools.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.pgoutbox.relay.OutboxTableStats;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

class SoakPhasesTest {

  private static final List<HoldWindow> WINDOW = List.of(new HoldWindow(30, 30));

  /** Ten-second intervals from 0, each publishing 100 events that took {@code millis[i]}. */
  private static List<SoakInterval> intervals(long[] millis, long[] pending) {
    List<SoakInterval> intervals = new ArrayList<>();
    for (int i = 0; i < millis.length; i++) {
      Histogram latency = Micros.histogram();
      latency.recordValueWithCount(millis[i] * 1000, 100);
      intervals.add(
          new SoakInterval(
              i * 10,
              i * 10 + 10,
              true,
              false,
              100,
              latency,
              Micros.histogram(),
              Micros.histogram(),
              pending[i],
              Duration.ZERO,
              pending[i] <= 1000,
              new OutboxTableStats(100, pending[i], 0, null, 8192, 8192, 8192),
              Duration.ZERO,
              1));
    }
    return intervals;
  }

  @Test
  void recoveryLastsUntilTheLastIntervalThatMissedTheGoalAfterTheWindow() {
    // The interval ending at 80 s has a fine p99 but a backlog: it did not meet the goal yet.
    List<SoakInterval> intervals =
        intervals(
            new long[] {5, 5, 5, 200, 300, 400, 120, 5, 5, 5},
            new long[] {0, 0, 0, 10, 10, 10, 10, 5000, 0, 0});

    SoakPhases phases = new SoakPhases(intervals, WINDOW, 50);
    Map<String, Object> window = phases.windows().getFirst();

    assertThat((Double) window.get("p99_before_ms")).isCloseTo(5.0, within(0.01));
    assertThat((Double) window.get("p99_during_ms")).isBetween(399.0, 401.0);
    assertThat((Double) window.get("p99_recovering_ms")).isBetween(119.0, 121.0);
    assertThat((Double) window.get("p99_after_ms")).isCloseTo(5.0, within(0.01));
    assertThat(window.get("recovery_s")).isEqualTo(20.0);
    // The first interval after the window kept up (pending 10) but missed the p99 goal.
    assertThat(window.get("caught_up_s")).isEqualTo(10.0);
    assertThat(window.get("first_healthy_s")).isEqualTo(30.0);
    assertThat(window.get("max_pending_during")).isEqualTo(5000L);
    assertThat(phases.p99OutsideWindows()).isCloseTo(5.0, within(0.01));
  }

  @Test
  void aWindowThatHurtNothingRecoversAtOnce() {
    List<SoakInterval> intervals =
        intervals(new long[] {5, 5, 5, 6, 7, 6, 5, 5}, new long[] {0, 0, 0, 0, 0, 0, 0, 0});

    Map<String, Object> window = new SoakPhases(intervals, WINDOW, 50).windows().getFirst();

    assertThat(window.get("recovery_s")).isEqualTo(0.0);
    assertThat(window.get("p99_recovering_ms")).isNull();
    assertThat((Double) window.get("p99_after_ms")).isCloseTo(5.0, within(0.01));
  }

  @Test
  void aRunThatNeverRecoversSaysSo() {
    List<SoakInterval> intervals =
        intervals(
            new long[] {5, 5, 5, 900, 900, 900, 800, 700}, new long[] {0, 0, 0, 0, 0, 0, 0, 0});

    SoakPhases phases = new SoakPhases(intervals, WINDOW, 50);
    Map<String, Object> window = phases.windows().getFirst();

    assertThat(window.get("recovery_s")).isNull();
    assertThat(window.get("caught_up_s")).isEqualTo(10.0);
    assertThat(window.get("first_healthy_s")).isNull();
    assertThat(window.get("p99_after_ms")).isNull();
    assertThat((Double) window.get("p99_recovering_ms")).isBetween(799.0, 801.0);
    // Outside the window: only the intervals before it, none of those still recovering.
    assertThat(phases.p99OutsideWindows()).isCloseTo(5.0, within(0.01));
  }

  @Test
  void oneSlowIntervalLateInTheRunMovesTheRecoveryButNotTheFirstHealthyInterval() {
    List<SoakInterval> intervals =
        intervals(
            new long[] {5, 5, 5, 900, 900, 900, 300, 5, 5, 5, 80, 5},
            new long[] {0, 0, 0, 9000, 9000, 9000, 2000, 0, 0, 0, 0, 0});

    Map<String, Object> window = new SoakPhases(intervals, WINDOW, 50).windows().getFirst();

    assertThat(window.get("recovery_s")).isEqualTo(50.0);
    assertThat(window.get("caught_up_s")).isEqualTo(20.0);
    assertThat(window.get("first_healthy_s")).isEqualTo(20.0);
  }

  @Test
  void drainingIntervalsCountInNoPhase() {
    List<SoakInterval> intervals =
        new ArrayList<>(intervals(new long[] {5, 5, 5, 5, 5, 5, 5}, new long[7]));
    SoakInterval last = intervals.removeLast();
    intervals.add(
        new SoakInterval(
            last.startSeconds(),
            last.endSeconds(),
            false,
            false,
            0,
            histogramOf(9000),
            Micros.histogram(),
            Micros.histogram(),
            0,
            Duration.ZERO,
            true,
            OutboxTableStats.EMPTY,
            Duration.ZERO,
            1));

    SoakPhases phases = new SoakPhases(intervals, WINDOW, 50);

    assertThat(phases.p99OutsideWindows()).isCloseTo(5.0, within(0.01));
  }

  private static Histogram histogramOf(long millis) {
    Histogram h = Micros.histogram();
    h.recordValue(millis * 1000);
    return h;
  }
}

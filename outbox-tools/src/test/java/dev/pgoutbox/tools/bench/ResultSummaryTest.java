package dev.pgoutbox.tools.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class ResultSummaryTest {

  @Test
  void everyRatioIsSummarizedByItsMedianNotByTheFirstRound() {
    List<Result> rounds =
        List.of(
            round(23964, 1.229, 0.633, 0.5),
            round(32366, 0.824, 0.631, 0.6),
            round(31839, 0.828, 0.846, 0.7));
    Result summary = Result.summarize("drain", rounds);
    assertThat(summary.get("events_per_s")).isEqualTo(31839.0);
    assertThat(summary.get("ratio_traced_to_drain")).isEqualTo(0.828);
    assertThat(summary.get("ratio_traced_to_drain_min")).isEqualTo(0.824);
    assertThat(summary.get("ratio_traced_to_drain_max")).isEqualTo(1.229);
    assertThat(summary.get("ratio_observed_to_drain")).isEqualTo(0.633);
    assertThat(summary.get("ratio_to_limit")).isEqualTo(0.6);
  }

  private static Result round(double drain, double traced, double observed, double limit) {
    return new Result("drain")
        .put("events_per_s", drain)
        .put("ratio_traced_to_drain", traced)
        .put("ratio_observed_to_drain", observed)
        .put("ratio_to_limit", limit);
  }
}

package dev.pgoutbox.example.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.example.chaos.FaultPlan.Fault;
import dev.pgoutbox.example.chaos.FaultPlan.Kind;
import java.util.List;
import org.junit.jupiter.api.Test;

class FaultPlanTest {

  @Test
  void theSameSeedGivesTheSameSchedule() {
    assertThat(FaultPlan.of(42, 120, 3, 5)).isEqualTo(FaultPlan.of(42, 120, 3, 5));
    assertThat(FaultPlan.of(42, 120, 3, 5)).isNotEqualTo(FaultPlan.of(43, 120, 3, 5));
  }

  @Test
  void aFullRunHasRelayKillsAndOneOfEachOutage() {
    FaultPlan plan = FaultPlan.of(1, 120, 3, 5);

    assertThat(plan.count(Kind.RELAY_KILL)).isEqualTo(23);
    assertThat(plan.count(Kind.BROKER_OUTAGE)).isEqualTo(1);
    assertThat(plan.count(Kind.POSTGRES_CRASH)).isEqualTo(1);
    assertThat(plan.count(Kind.NETWORK_CUT)).isEqualTo(1);
    assertThat(plan.count(Kind.NETWORK_PARTITION)).isEqualTo(1);
    assertThat(plan.faults()).allSatisfy(f -> assertThat(f.end()).isLessThan(120));
    assertThat(plan.faults())
        .filteredOn(f -> f.kind() == Kind.RELAY_KILL)
        .allSatisfy(f -> assertThat(f.relay()).isBetween(0, 2));
  }

  @Test
  void theOutagesDoNotOverlap() {
    List<Fault> outages =
        FaultPlan.of(1, 600, 3, 5).faults().stream()
            .filter(f -> f.kind() != Kind.RELAY_KILL)
            .toList();

    assertThat(outages).hasSize(4 * 5);
    for (int i = 1; i < outages.size(); i++) {
      assertThat(outages.get(i).at()).isGreaterThan(outages.get(i - 1).end());
    }
  }
}

package dev.pgoutbox.tools.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.tools.chaos.FaultPlan.Fault;
import dev.pgoutbox.tools.chaos.FaultPlan.Kind;
import java.util.List;
import org.junit.jupiter.api.Test;

class FaultPlanTest {

  @Test
  void theSameSeedGivesTheSameSchedule() {
    assertThat(FaultPlan.of(42, 120, 3, 5, 42)).isEqualTo(FaultPlan.of(42, 120, 3, 5, 42));
    assertThat(FaultPlan.of(42, 120, 3, 5, 42)).isNotEqualTo(FaultPlan.of(43, 120, 3, 5, 42));
  }

  @Test
  void aFullRunHasRelayKillsAndOneOfEachOutage() {
    FaultPlan plan = FaultPlan.of(1, 120, 3, 5, 42);

    assertThat(plan.count(Kind.RELAY_KILL)).isEqualTo(23);
    assertThat(plan.count(Kind.RELAY_FREEZE)).isEqualTo(1);
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
        FaultPlan.of(1, 600, 3, 5, 42).faults().stream()
            .filter(f -> f.kind() != Kind.RELAY_KILL && f.kind() != Kind.RELAY_FREEZE)
            .toList();

    assertThat(outages).hasSize(4 * 5);
    for (int i = 1; i < outages.size(); i++) {
      assertThat(outages.get(i).at()).isGreaterThan(outages.get(i - 1).end());
    }
  }

  @Test
  void aFrozenRelayIsNeverKilledWhileFrozen() {
    for (long seed = 0; seed < 50; seed++) {
      FaultPlan plan = FaultPlan.of(seed, 240, 2, 2, 42);
      List<Fault> freezes =
          plan.faults().stream().filter(f -> f.kind() == Kind.RELAY_FREEZE).toList();
      assertThat(freezes).hasSize(2);
      for (Fault freeze : freezes) {
        assertThat(plan.faults())
            .filteredOn(f -> f.kind() == Kind.RELAY_KILL)
            .filteredOn(f -> f.end() >= freeze.at() && f.at() <= freeze.end())
            .isNotEmpty()
            .allSatisfy(kill -> assertThat(kill.relay()).isNotEqualTo(freeze.relay()));
      }
    }
  }

  @Test
  void theFreezeStartsInTheBrokerOutageAndEndsBeforeTheCrash() {
    FaultPlan plan = FaultPlan.of(3, 120, 3, 5, 42);
    Fault freeze = only(plan, Kind.RELAY_FREEZE);

    assertThat(freeze.at()).isEqualTo(only(plan, Kind.BROKER_OUTAGE).at() + 1);
    assertThat(freeze.end()).isLessThan(only(plan, Kind.POSTGRES_CRASH).at());
    assertThat(FaultPlan.of(3, 40, 2, 4, 13).count(Kind.RELAY_FREEZE))
        .as("the test suite's shortened run has its freeze")
        .isEqualTo(1);
  }

  private static Fault only(FaultPlan plan, Kind kind) {
    return plan.faults().stream().filter(f -> f.kind() == kind).findFirst().orElseThrow();
  }

  @Test
  void aSingleRelayIsNeverFrozen() {
    assertThat(FaultPlan.of(1, 120, 1, 5, 45).count(Kind.RELAY_FREEZE)).isZero();
  }

  @Test
  void withWalRelaysEachBlockEndsWithOneFaultOfTheSlotInTurn() {
    FaultPlan plan = FaultPlan.of(9, 600, 3, 5, 42, true);
    List<Kind> slotFaults =
        plan.faults().stream().map(Fault::kind).filter(FaultPlan::isSlotFault).toList();
    assertThat(slotFaults)
        .containsExactly(
            Kind.PUBLICATION_DRIFT,
            Kind.SLOT_INVALIDATION,
            Kind.STANDBY_PROMOTION,
            Kind.SLOT_DROP,
            Kind.PUBLICATION_DRIFT);
    assertThat(FaultPlan.of(9, 600, 3, 5, 42, false).faults())
        .noneMatch(f -> FaultPlan.isSlotFault(f.kind()));
    assertThat(FaultPlan.of(11, 20, 2, 4, 13, true).count(Kind.STANDBY_PROMOTION)).isEqualTo(1);
  }

  @Test
  void noRelayIsKilledNearAFaultOfTheSlot() {
    for (long seed = 0; seed < 20; seed++) {
      FaultPlan plan = FaultPlan.of(seed, 600, 3, 2, 42, true);
      for (Fault slot : plan.faults()) {
        if (!FaultPlan.isSlotFault(slot.kind())) {
          continue;
        }
        assertThat(plan.faults())
            .filteredOn(f -> f.kind() == Kind.RELAY_KILL)
            .noneMatch(kill -> kill.end() >= slot.at() - 1 && kill.at() <= slot.end() + 1);
      }
    }
  }

  @Test
  void theFaultsOfTheSlotDoNotOverlapTheOutages() {
    List<Fault> big =
        FaultPlan.of(1, 600, 3, 5, 42, true).faults().stream()
            .filter(f -> f.kind() != Kind.RELAY_KILL && f.kind() != Kind.RELAY_FREEZE)
            .toList();
    for (int i = 1; i < big.size(); i++) {
      assertThat(big.get(i).at()).isGreaterThanOrEqualTo(big.get(i - 1).end());
    }
  }
}

package dev.pgoutbox.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class CommittingRechecksTest {

  @Test
  void quickWhileClaimsFindEventsThenBacksOffToTheLongestAfterTwentyEmptyClaims() {
    CommittingRechecks rechecks = new CommittingRechecks();
    assertThat(rechecks.next(5)).isEqualTo(CommittingRechecks.QUICK);
    for (int i = 0; i < CommittingRechecks.QUICK_RECHECKS; i++) {
      assertThat(rechecks.next(0)).isEqualTo(CommittingRechecks.QUICK);
    }
    assertThat(rechecks.next(0)).isEqualTo(2 * CommittingRechecks.QUICK);
    assertThat(rechecks.next(0)).isEqualTo(4 * CommittingRechecks.QUICK);
    for (int i = 0; i < 100; i++) {
      rechecks.next(0);
    }
    assertThat(rechecks.next(0)).isEqualTo(CommittingRechecks.LONGEST);
    assertThat(rechecks.next(1))
        .as("a claim that found events")
        .isEqualTo(CommittingRechecks.QUICK);
  }

  @Test
  void resetStartsOver() {
    CommittingRechecks rechecks = new CommittingRechecks();
    for (int i = 0; i < 30; i++) {
      rechecks.next(0);
    }
    rechecks.reset();
    assertThat(rechecks.next(0)).isEqualTo(CommittingRechecks.QUICK);
  }
}

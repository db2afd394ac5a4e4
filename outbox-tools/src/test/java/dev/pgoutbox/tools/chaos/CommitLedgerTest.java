package dev.pgoutbox.tools.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.DeadLetterPolicy;
import dev.pgoutbox.testing.DeliveryChecker;
import dev.pgoutbox.tools.chaos.CommitLedger.Row;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

class CommitLedgerTest {

  private static final DeadLetterPolicy HOLD = DeadLetterPolicy.HOLD_AGGREGATE;
  private static final DeadLetterPolicy RELEASE = DeadLetterPolicy.RELEASE_AGGREGATE;

  /** A processed event; seq is the writer's ticket, committed at {@code committedAt}. */
  private static Row done(int seq, long position, long committedAt) {
    return new Row("a", seq, position, committedAt, "step", true, false, null);
  }

  private static Row dead(int seq, long position, long committedAt, @Nullable String reason) {
    return new Row("a", seq, position, committedAt, "poison", false, true, reason);
  }

  private static Row pending(int seq, long position, long committedAt) {
    return new Row("a", seq, position, committedAt, "step", false, false, null);
  }

  private static DeliveryChecker delivered(int... seqs) {
    DeliveryChecker checker = new DeliveryChecker();
    for (int seq : seqs) {
      checker.receive(
          ("{\"aggregate\":\"a\",\"seq\":" + seq + "}").getBytes(StandardCharsets.UTF_8), 0);
    }
    return checker;
  }

  @Test
  void orderIsJudgedByCommitOrderNotByTheWritersSeqs() {
    // Two writers took seqs 1 and 2; seq 2 committed first.
    CommitLedger ledger = new CommitLedger(List.of(done(1, 11, 200), done(2, 10, 100)));

    assertThat(ledger.judge(delivered(2, 1), HOLD, Map.of()).reordered()).isZero();
    assertThat(ledger.judge(delivered(1, 2), HOLD, Map.of()).reordered()).isEqualTo(1);
  }

  @Test
  void positionOrderThatDiffersFromCommitOrderIsCounted() {
    CommitLedger ledger = new CommitLedger(List.of(done(1, 10, 200), done(2, 11, 100)));

    assertThat(ledger.judge(delivered(2, 1), HOLD, Map.of()).commitOrderMismatches()).isEqualTo(1);
  }

  @Test
  void underHoldEventsBehindADeadLetterAreHeldAndNoneMayBeDelivered() {
    CommitLedger ledger =
        new CommitLedger(
            List.of(done(1, 1, 1), dead(2, 2, 2, "unroutable (chaos)"), pending(3, 3, 3)));

    CommitLedger.Result kept = ledger.judge(delivered(1), HOLD, Map.of());
    CommitLedger.Result broken = ledger.judge(delivered(1, 3), HOLD, Map.of());

    assertThat(kept.unaccounted()).isZero();
    assertThat(kept.held()).isEqualTo(1);
    assertThat(kept.deadLetters()).isEqualTo(1);
    assertThat(kept.deadLettersWithReason()).isEqualTo(1);
    assertThat(kept.deadLettersInjected()).isEqualTo(1);
    assertThat(kept.deliveredPastDeadLetter()).isZero();
    assertThat(broken.deliveredPastDeadLetter()).isEqualTo(1);
  }

  @Test
  void underHoldARetriedDeadLetterMustGoOutBeforeItsSuccessors() {
    CommitLedger ledger = new CommitLedger(List.of(done(1, 1, 1), done(2, 2, 2), done(3, 3, 3)));
    Map<String, Set<Integer>> retried = Map.of("a", Set.of(2));

    CommitLedger.Result inOrder = ledger.judge(delivered(1, 2, 3), HOLD, retried);
    CommitLedger.Result late = ledger.judge(delivered(1, 3, 2), HOLD, retried);

    assertThat(inOrder.reordered()).isZero();
    assertThat(inOrder.retriedDelivered()).isEqualTo(1);
    assertThat(late.reordered()).isEqualTo(1);
  }

  @Test
  void underReleaseSuccessorsGoOnAndARetriedDeadLetterMayArriveLate() {
    CommitLedger ledger =
        new CommitLedger(
            List.of(
                done(1, 1, 1),
                done(2, 2, 2),
                done(3, 3, 3),
                dead(4, 4, 4, "x (chaos)"),
                done(5, 5, 5)));
    Map<String, Set<Integer>> retried = Map.of("a", Set.of(2));

    CommitLedger.Result result = ledger.judge(delivered(1, 3, 5, 2), RELEASE, retried);
    CommitLedger.Result othersOutOfOrder = ledger.judge(delivered(1, 5, 3, 2), RELEASE, retried);

    assertThat(result.reordered()).isZero();
    assertThat(result.unaccounted()).isZero();
    assertThat(result.held()).isZero();
    assertThat(othersOutOfOrder.reordered())
        .as("events that were never dead keep their order under release too")
        .isEqualTo(1);
  }

  @Test
  void underReleaseAnEventPendingBehindADeadLetterIsNotHeldButUnaccounted() {
    CommitLedger ledger = new CommitLedger(List.of(dead(1, 1, 1, "x (chaos)"), pending(2, 2, 2)));

    CommitLedger.Result result = ledger.judge(delivered(), RELEASE, Map.of());

    assertThat(result.held()).isZero();
    assertThat(result.unaccounted()).isEqualTo(1);
    assertThat(result.pendingNotHeld()).isEqualTo(1);
  }

  @Test
  void aProcessedEventTheCheckerNeverSawIsUnaccountedAndAStrangerIsUnexpected() {
    CommitLedger ledger = new CommitLedger(List.of(done(1, 1, 1), done(2, 2, 2)));

    CommitLedger.Result result = ledger.judge(delivered(1, 9), HOLD, Map.of());

    assertThat(result.unaccounted()).isEqualTo(1);
    assertThat(result.pendingNotHeld()).isZero();
    assertThat(result.unexpected()).isEqualTo(1);
  }

  @Test
  void aDeadLetterWithoutAReasonOrFromElsewhereIsToldApart() {
    CommitLedger ledger =
        new CommitLedger(List.of(dead(1, 1, 1, null), dead(2, 2, 2, "publish timed out")));

    CommitLedger.Result result = ledger.judge(delivered(), RELEASE, Map.of());

    assertThat(result.deadLetters()).isEqualTo(2);
    assertThat(result.deadLettersWithReason()).isEqualTo(1);
    assertThat(result.deadLettersInjected()).isZero();
  }

  @Test
  void withoutCommitTimestampsPositionOrderStandsIn() {
    CommitLedger ledger =
        new CommitLedger(
            List.of(
                new Row("a", 1, 2, null, "step", true, false, null),
                new Row("a", 2, 1, null, "step", true, false, null)));

    CommitLedger.Result result = ledger.judge(delivered(2, 1), HOLD, Map.of());

    assertThat(result.commitOrderMismatches()).isNull();
    assertThat(result.reordered()).isZero();
  }
}

package dev.pgoutbox.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;

class DeliveryCheckerTest {

  private final DeliveryChecker checker = new DeliveryChecker();

  private void receive(String aggregate, int seq) {
    String json = "{\"aggregate\":\"" + aggregate + "\",\"seq\":" + seq + ",\"written_at\":1000}";
    checker.receive(json.getBytes(StandardCharsets.UTF_8), 1_250);
  }

  @Test
  void inOrderDeliveryIsClean() {
    receive("a", 1);
    receive("b", 1);
    receive("a", 2);
    receive("b", 2);

    assertThat(checker.delivered()).isEqualTo(4);
    assertThat(checker.reordered()).isZero();
    assertThat(checker.duplicates()).isZero();
    assertThat(checker.missing(Map.of("a", 2, "b", 2))).isZero();
    assertThat(checker.longestWaitMillis()).isEqualTo(250);
    assertThat(checker.longestWaitWrittenAt()).isEqualTo(1_000);
    assertThat(checker.waitPercentileMillis(50)).isEqualTo(250);
  }

  @Test
  void aLaterSeqBeforeAnEarlierOneIsAReordering() {
    receive("a", 1);
    receive("a", 3);
    receive("a", 2);

    assertThat(checker.reordered()).isEqualTo(1);
    assertThat(checker.missing(Map.of("a", 3))).isZero();
  }

  @Test
  void aRepeatIsADuplicateNotAReordering() {
    receive("a", 1);
    receive("a", 2);
    receive("a", 1);
    receive("a", 2);
    receive("a", 3);

    assertThat(checker.duplicates()).isEqualTo(2);
    assertThat(checker.reordered()).isZero();
    assertThat(checker.delivered()).isEqualTo(3);
    assertThat(checker.received()).isEqualTo(5);
  }

  @Test
  void committedEventsThatNeverArriveAreLost() {
    receive("a", 1);
    receive("a", 3);

    assertThat(checker.missing(Map.of("a", 3, "b", 2))).isEqualTo(1 + 2);
    assertThat(checker.hasAll(Map.of("a", 3))).isFalse();
    assertThat(checker.hasAll(Map.of("a", 1))).isTrue();
  }

  @Test
  void anEventNoWriterCommittedIsUnexpected() {
    receive("a", 1);
    receive("a", 2);

    assertThat(checker.unexpected(Map.of("a", 1))).isEqualTo(1);
    assertThat(checker.unexpected(Map.of("a", 2))).isZero();
  }

  @Test
  void withoutWrittenAtNoWaitIsCounted() {
    checker.receive("{\"aggregate\":\"a\",\"seq\":1}".getBytes(StandardCharsets.UTF_8), 5_000);

    assertThat(checker.delivered()).isEqualTo(1);
    assertThat(checker.longestWaitMillis()).isZero();
  }

  @Test
  void aPayloadWithoutTheFieldsIsCountedUnreadable() {
    checker.receive("{\"other\":1}".getBytes(StandardCharsets.UTF_8), 0);
    checker.receive("not json".getBytes(StandardCharsets.UTF_8), 0);

    assertThat(checker.unreadable()).isEqualTo(2);
    assertThat(checker.delivered()).isZero();
  }
}

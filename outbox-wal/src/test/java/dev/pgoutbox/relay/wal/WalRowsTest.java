package dev.pgoutbox.relay.wal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.OffsetDateTime;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The hand-written timestamptz reader agrees with the formatter it stands in for. */
class WalRowsTest {

  @Test
  void readsPostgresIsoTimestampsAsTheFormatterDoes() {
    for (String text :
        List.of(
            "2026-12-01 11:17:04+00",
            "2026-12-01 11:17:04.5+05:30",
            "2026-12-01 11:17:04.123-03",
            "2026-12-01 11:17:04.123456+00",
            "0001-01-01 00:00:00+00",
            "9999-12-31 23:59:59.999999+14",
            "2026-02-28 23:59:59.000001-09:30")) {
      assertThat(WalRows.timestamptzFast(text))
          .as(text)
          .isEqualTo(OffsetDateTime.parse(text, WalRows.TIMESTAMPTZ));
    }
  }

  @Test
  void readsAnOffsetWithSecondsThatTheFormatterTakesForUtc() {
    // Local mean time before 1912 (Europe/Amsterdam, DateStyle ISO): the formatter reads "+00" as
    // UTC and refuses the rest; such a row went to the drainer.
    assertThat(WalRows.timestamptzFast("1900-06-30 12:00:00+00:19:32"))
        .isEqualTo(OffsetDateTime.parse("1900-06-30T12:00:00+00:19:32"));
  }

  @Test
  void leavesEveryOtherTextToTheFormatter() {
    for (String text :
        List.of(
            "infinity",
            "-infinity",
            "0044-03-15 12:00:00+00 BC",
            "20000-01-01 00:00:00+00",
            "2026-13-01 11:17:04+00",
            "2026-02-30 11:17:04+00",
            "2026-12-01 11:17:04.+00",
            "2026-12-01 11:17:04.1234567890+00",
            "2026-12-01 11:17:04",
            "2026-12-01 11:17:04+0",
            "2026-12-01 11:17:04+00:",
            "2026-12-01T11:17:04+00",
            "2026-12-01 11:17:04+00:00:00:00",
            "2026-12-01 1a:17:04+00")) {
      assertThat(WalRows.timestamptzFast(text)).as(text).isNull();
    }
    assertThat(WalRows.timestamptzOrNull("infinity")).isNull();
  }
}

package dev.pgoutbox.tools.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class HoldWindowTest {

  @Test
  void theDefaultIsOneTenMinuteWindowInTheMiddleOfAnHour() {
    assertThat(HoldWindow.of(List.of(), 3600)).containsExactly(new HoldWindow(1500, 600));
  }

  @Test
  void aShortRunHoldsForAThirdOfItInTheMiddle() {
    assertThat(HoldWindow.of(List.of(), 120)).containsExactly(new HoldWindow(40, 40));
  }

  @Test
  void windowsTakeSecondsOrUnitsAndComeBackSorted() {
    assertThat(HoldWindow.of(List.of("40m:5m", "600:90s", "1h:2m"), 7200))
        .containsExactly(
            new HoldWindow(600, 90), new HoldWindow(2400, 300), new HoldWindow(3600, 120));
  }

  @Test
  void noneMeansNoWindow() {
    assertThat(HoldWindow.of(List.of("none"), 60)).isEmpty();
  }

  @Test
  void badWindowsAreRefusedNamingTheOptionAndTheLimit() {
    assertThatThrownBy(() -> HoldWindow.of(List.of("10"), 60))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("--hold-xmin must be <start>:<duration>")
        .hasMessageContaining("'10'");
    assertThatThrownBy(() -> HoldWindow.of(List.of("50:20"), 60))
        .hasMessage("--hold-xmin 50:20 must end within the run (--seconds 60), ends at 70");
    assertThatThrownBy(() -> HoldWindow.of(List.of("10:0"), 60))
        .hasMessage("--hold-xmin duration must be at least 1 second, was '10:0'");
    assertThatThrownBy(() -> HoldWindow.of(List.of("10:20", "25:10"), 60))
        .hasMessage("--hold-xmin windows must not overlap: 10s:20s and 25s:10s");
  }

  @Test
  void durationOptionsTakeSecondsOrAUnit() {
    assertThat(HoldWindow.seconds("90", "--retention")).isEqualTo(90);
    assertThat(HoldWindow.seconds("5m", "--retention")).isEqualTo(300);
    assertThat(HoldWindow.seconds("2h", "--retention")).isEqualTo(7200);
    assertThatThrownBy(() -> HoldWindow.seconds("5 minutes", "--retention"))
        .hasMessage(
            "--retention must be a whole number of seconds, or with a unit s, m or h (e.g. 5m),"
                + " was '5 minutes'");
  }
}

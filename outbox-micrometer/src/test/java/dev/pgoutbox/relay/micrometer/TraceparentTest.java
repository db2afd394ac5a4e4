package dev.pgoutbox.relay.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class TraceparentTest {

  static final String TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
  static final String SPAN = "00f067aa0ba902b7";

  @Test
  void readsTheIdsAndTheSampledFlag() {
    assertThat(Traceparent.parse("00-" + TRACE + "-" + SPAN + "-01"))
        .isEqualTo(new Traceparent(TRACE, SPAN, true));
    assertThat(Traceparent.parse("00-" + TRACE + "-" + SPAN + "-00"))
        .isEqualTo(new Traceparent(TRACE, SPAN, false));
    assertThat(Traceparent.parse("00-" + TRACE + "-" + SPAN + "-03").sampled()).isTrue();
  }

  @Test
  void readsALaterVersionByItsFirstFields() {
    assertThat(Traceparent.parse("01-" + TRACE + "-" + SPAN + "-01-what-comes-next"))
        .isEqualTo(new Traceparent(TRACE, SPAN, true));
  }

  @Test
  void refusesWhatIsNotAValidTraceparent() {
    assertThat(Traceparent.parse(null)).isNull();
    assertThat(Traceparent.parse("")).isNull();
    assertThat(Traceparent.parse("00-" + TRACE + "-" + SPAN)).isNull();
    assertThat(Traceparent.parse("00-" + TRACE + "-" + SPAN + "-01-extra")).isNull();
    assertThat(Traceparent.parse("ff-" + TRACE + "-" + SPAN + "-01")).isNull();
    assertThat(Traceparent.parse("00-" + TRACE.toUpperCase() + "-" + SPAN + "-01")).isNull();
    assertThat(Traceparent.parse("00-" + "0".repeat(32) + "-" + SPAN + "-01")).isNull();
    assertThat(Traceparent.parse("00-" + TRACE + "-" + "0".repeat(16) + "-01")).isNull();
    assertThat(Traceparent.parse("00_" + TRACE + "-" + SPAN + "-01")).isNull();
    assertThat(Traceparent.parse("00-" + TRACE + "-" + SPAN + "-0g")).isNull();
    assertThat(Traceparent.parse("01-" + TRACE + "-" + SPAN + "-01x")).isNull();
  }
}

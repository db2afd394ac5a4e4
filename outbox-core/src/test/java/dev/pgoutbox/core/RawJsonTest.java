package dev.pgoutbox.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class RawJsonTest {

  @Test
  void anyOneStrictJsonValueIsAccepted() {
    for (String json :
        new String[] {
          "{}", "[]", "null", "true", "-0.5e-3", "\"text\"", " {\"a\": [1, {\"b\": null}]} "
        }) {
      assertThat(RawJson.of(json).json()).isEqualTo(json);
    }
  }

  @Test
  void textThatIsNotExactlyOneStrictJsonValueIsRefused() {
    assertThatThrownBy(() -> RawJson.of(""))
        .isInstanceOf(InvalidEventException.class)
        .hasMessage("payload must be a JSON value, was empty");
    assertThatThrownBy(() -> RawJson.of("{'a': 1}"))
        .hasMessageStartingWith("payload is not valid JSON: Unexpected character");
    assertThatThrownBy(() -> RawJson.of("[1,]"))
        .hasMessageStartingWith("payload is not valid JSON");
    assertThatThrownBy(() -> RawJson.of("NaN")).hasMessageStartingWith("payload is not valid JSON");
    assertThatThrownBy(() -> RawJson.of("{\"a\": 1} // note"))
        .hasMessageStartingWith("payload is not valid JSON");
    assertThatThrownBy(() -> RawJson.of("1 2"))
        .hasMessage("payload must be one JSON value, found more after it at offset 2");
    assertThatThrownBy(() -> RawJson.of(null)).hasMessage("payload JSON text must not be null");
  }

  @Test
  void jsonThatPostgresqlWouldRefuseIsRefusedWithItsPath() {
    assertThatThrownBy(() -> RawJson.of("{\"a\": [\"ok\", \"\\u0000\"]}"))
        .hasMessage(
            "payload string at /a/1 must not contain U+0000 (PostgreSQL cannot store it), found at"
                + " index 0");
    assertThatThrownBy(() -> RawJson.of("{\"k\\u0000\": 1}"))
        .hasMessageStartingWith("payload key at /k\\u0000 must not contain U+0000");
    assertThatThrownBy(() -> RawJson.of("\"\\ud800\""))
        .hasMessage(
            "payload string at / must not contain an unpaired surrogate (not valid UTF-8), found"
                + " \\ud800 at index 0");
  }

  @Test
  void numbersFollowPostgresqlNumericLimits() {
    RawJson.of("1e131071");
    RawJson.of("1e-16383");
    RawJson.of("[" + "9".repeat(20_000) + "]");
    assertThatThrownBy(() -> RawJson.of("{\"n\": 1e131072}"))
        .hasMessage(
            "payload number at /n is out of PostgreSQL's numeric range (at most 131072 digits"
                + " before the decimal point and 16383 after), was 1e131072");
    assertThatThrownBy(() -> RawJson.of("1e-16384"))
        .hasMessageContaining("out of PostgreSQL's numeric range");
    assertThatThrownBy(() -> RawJson.of("0." + "1".repeat(16_384)))
        .hasMessageContaining("out of PostgreSQL's numeric range");
  }
}

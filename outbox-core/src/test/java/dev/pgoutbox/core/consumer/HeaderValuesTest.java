package dev.pgoutbox.core.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class HeaderValuesTest {

  static final List<String> AWKWARD =
      List.of(
          "",
          "plain",
          "Zürich",
          "東京-1",
          "Euro € 😀",
          "a b%41\"q",
          " leading and trailing ",
          "tab\there",
          "line\r\nbreak",
          "\u0001\u007f\u0080\u009f",
          "%",
          "%zz",
          "UTF-8''x",
          "'quotes' and \"double\" and \\ backslash",
          "x".repeat(5000) + "ü");

  @Test
  void percentEncodingIsTheCloudEventsBindingsExample() {
    // HTTP binding and NATS draft, §3.1.3.2.
    assertThat(HeaderValues.percentEncode("Euro € 😀"))
        .isEqualTo("Euro%20%E2%82%AC%20%F0%9F%98%80");
    assertThat(HeaderValues.percentEncode("a b%41\"q")).isEqualTo("a%20b%2541%22q");
    assertThat(HeaderValues.percentEncode("/orders-service")).isEqualTo("/orders-service");
  }

  @Test
  void percentDecodingFollowsTheBindings() {
    assertThat(HeaderValues.percentDecode("Euro%20%e2%82%ac%20%F0%9F%98%80"))
        .isEqualTo("Euro € 😀");
    assertThat(HeaderValues.percentDecode("%41bc")).isEqualTo("Abc");
    assertThat(HeaderValues.percentDecode("\"a b \\\"q\\\"\"")).isEqualTo("a b \"q\"");
    assertThatThrownBy(() -> HeaderValues.percentDecode("%C0%A0"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not valid UTF-8");
    assertThatThrownBy(() -> HeaderValues.percentDecode("50%"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("malformed percent escape at index 2");
  }

  @Test
  void everyAwkwardValueRoundTripsAndEncodesToPrintableAscii() {
    for (String value : AWKWARD) {
      String ce = HeaderValues.percentEncode(value);
      assertThat(HeaderValues.percentDecode(ce)).as(value).isEqualTo(value);
      assertThat(ce.chars()).as(ce).allMatch(c -> c >= 0x21 && c <= 0x7E && c != '"');
      String ext = HeaderValues.extValue(value);
      assertThat(HeaderValues.fromExtValue(ext)).as(value).isEqualTo(value);
      assertThat(ext.chars()).as(ext).allMatch(c -> c >= 0x21 && c <= 0x7E);
    }
  }

  @Test
  void plainValuesArePrintableAsciiWithoutEdgeSpaces() {
    assertThat(HeaderValues.isPlain("")).isTrue();
    assertThat(HeaderValues.isPlain("order created %41 \"q\"")).isTrue();
    assertThat(HeaderValues.isPlain("Zürich")).isFalse();
    assertThat(HeaderValues.isPlain(" a")).isFalse();
    assertThat(HeaderValues.isPlain("a ")).isFalse();
    assertThat(HeaderValues.isPlain("a\tb")).isFalse();
    assertThat(HeaderValues.isPlain("a\u007f")).isFalse();
  }

  @Test
  void extValueIsRfc8187() {
    assertThat(HeaderValues.extValue("Zürich")).isEqualTo("UTF-8''Z%C3%BCrich");
    assertThat(HeaderValues.fromExtValue("utf-8'de'Z%c3%bcrich")).isEqualTo("Zürich");
    assertThatThrownBy(() -> HeaderValues.fromExtValue("ISO-8859-1''Z%FCrich"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("must start with UTF-8'");
  }
}

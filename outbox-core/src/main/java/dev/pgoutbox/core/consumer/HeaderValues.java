package dev.pgoutbox.core.consumer;

import static java.util.Objects.requireNonNull;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * The two text encodings pgoutbox uses where a header can only hold printable US-ASCII (NATS
 * headers, HTTP header fields), so that every value the writer accepts arrives unchanged:
 *
 * <ul>
 *   <li><b>CloudEvents percent-encoding</b> ({@link #percentEncode}, {@link #percentDecode}), as
 *       the CloudEvents HTTP binding (§3.1.3.2) and the NATS binding's binary mode (draft,
 *       §3.1.3.2) define it for {@code ce-*} values: space, {@code "}, {@code %} and every
 *       character outside U+0021..U+007E become {@code %XY} per UTF-8 byte, upper-case hex.
 *   <li><b>pgoutbox's own headers</b> ({@link #isPlain}, {@link #extValue}, {@link #fromExtValue}):
 *       a value that is plain (printable US-ASCII, no leading or trailing space) travels as it is
 *       under its name; any other value travels under the name followed by {@code *} as an RFC 8187
 *       {@code ext-value}: {@code UTF-8''} and the value percent-encoded, every byte but RFC 8187's
 *       {@code attr-char}s. So {@code aggregate_id: Zürich} is sent as {@code aggregate_id*:
 *       UTF-8''Z%C3%BCrich}; {@link NatsHeaders#get} reads either back.
 * </ul>
 *
 * <p>Stateless and thread-safe.
 */
public final class HeaderValues {

  /** The charset prefix of every {@link #extValue}: {@value}. */
  public static final String EXT_VALUE_PREFIX = "UTF-8''";

  private static final char[] HEX = "0123456789ABCDEF".toCharArray();

  private HeaderValues() {}

  /**
   * {@code value} percent-encoded as the CloudEvents HTTP and NATS bindings say for {@code ce-*}
   * header values: space (U+0020), {@code "} (U+0022), {@code %} (U+0025) and every character
   * outside U+0021..U+007E are written as the {@code %XY} of each of their UTF-8 bytes.
   */
  public static String percentEncode(String value) {
    requireNonNull(value, "value");
    return encode(value, false);
  }

  /**
   * Decodes a CloudEvents header value as the bindings say a receiver must: a double-quoted string
   * is unquoted first (RFC 7230 §3.2.6, backslash escapes), then one round of percent-decoding,
   * lower-case hex accepted, bytes that are not valid UTF-8 refused.
   *
   * @throws IllegalArgumentException for a malformed escape or bytes that are not valid UTF-8
   */
  public static String percentDecode(String value) {
    requireNonNull(value, "value");
    return decode(unquote(value), "CloudEvents header value");
  }

  /**
   * Whether {@code value} can travel as it is in a NATS or HTTP header: printable US-ASCII
   * (U+0020..U+007E) that neither starts nor ends with a space (which a receiver would trim). The
   * empty value is plain.
   */
  public static boolean isPlain(String value) {
    requireNonNull(value, "value");
    int n = value.length();
    if (n > 0 && (value.charAt(0) == ' ' || value.charAt(n - 1) == ' ')) {
      return false;
    }
    for (int i = 0; i < n; i++) {
      char c = value.charAt(i);
      if (c < 0x20 || c > 0x7E) {
        return false;
      }
    }
    return true;
  }

  /**
   * {@code value} as an RFC 8187 {@code ext-value}: {@code UTF-8''} followed by the value's UTF-8
   * bytes, each byte that is not an {@code attr-char} (letters, digits and {@code !#$&+-.^_`|~})
   * written as {@code %XY}. Sent under the header's name followed by {@code *}.
   */
  public static String extValue(String value) {
    requireNonNull(value, "value");
    return EXT_VALUE_PREFIX + encode(value, true);
  }

  /**
   * The value of an RFC 8187 {@code ext-value} (charset {@code UTF-8}, any case, optional language
   * tag).
   *
   * @throws IllegalArgumentException if it is not an ext-value in UTF-8, or its bytes are not valid
   *     UTF-8
   */
  public static String fromExtValue(String extValue) {
    requireNonNull(extValue, "extValue");
    int quote = extValue.indexOf('\'');
    int second = quote < 0 ? -1 : extValue.indexOf('\'', quote + 1);
    if (quote < 0 || second < 0 || !extValue.substring(0, quote).equalsIgnoreCase("UTF-8")) {
      throw new IllegalArgumentException(
          "an ext-value must start with UTF-8'<language>', was '" + shorten(extValue) + "'");
    }
    return decode(extValue.substring(second + 1), "ext-value");
  }

  private static String encode(String value, boolean extValue) {
    StringBuilder out = null;
    byte[] bytes = null;
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (keeps(c, extValue)) {
        continue;
      }
      bytes = value.getBytes(StandardCharsets.UTF_8);
      out = new StringBuilder(bytes.length + 16);
      break;
    }
    if (out == null || bytes == null) {
      return value;
    }
    for (byte b : bytes) {
      int u = b & 0xFF;
      if (u < 0x80 && keeps((char) u, extValue)) {
        out.append((char) u);
      } else {
        out.append('%').append(HEX[u >> 4]).append(HEX[u & 0xF]);
      }
    }
    return out.toString();
  }

  private static boolean keeps(char c, boolean extValue) {
    if (!extValue) {
      return c >= 0x21 && c <= 0x7E && c != '"' && c != '%';
    }
    return (c >= 'a' && c <= 'z')
        || (c >= 'A' && c <= 'Z')
        || (c >= '0' && c <= '9')
        || "!#$&+-.^_`|~".indexOf(c) >= 0;
  }

  private static String unquote(String value) {
    String v = value.strip();
    if (v.length() < 2 || v.charAt(0) != '"' || v.charAt(v.length() - 1) != '"') {
      return value;
    }
    StringBuilder out = new StringBuilder(v.length());
    for (int i = 1; i < v.length() - 1; i++) {
      char c = v.charAt(i);
      if (c == '\\' && i + 1 < v.length() - 1) {
        c = v.charAt(++i);
      }
      out.append(c);
    }
    return out.toString();
  }

  private static String decode(String value, String what) {
    if (value.indexOf('%') < 0) {
      return value;
    }
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(value.length());
    for (int i = 0; i < value.length(); i++) {
      int c = value.codePointAt(i);
      if (c == '%') {
        int hi = i + 2 < value.length() ? Character.digit(value.charAt(i + 1), 16) : -1;
        int lo = hi < 0 ? -1 : Character.digit(value.charAt(i + 2), 16);
        if (lo < 0) {
          throw new IllegalArgumentException(
              what
                  + " has a malformed percent escape at index "
                  + i
                  + ": '"
                  + shorten(value)
                  + "'");
        }
        bytes.write(hi << 4 | lo);
        i += 2;
      } else {
        byte[] b = Character.toString(c).getBytes(StandardCharsets.UTF_8);
        bytes.write(b, 0, b.length);
        i += Character.charCount(c) - 1;
      }
    }
    try {
      return StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes.toByteArray()))
          .toString();
    } catch (CharacterCodingException e) {
      throw new IllegalArgumentException(
          what + " is not valid UTF-8 once percent-decoded: '" + shorten(value) + "'", e);
    }
  }

  private static String shorten(String s) {
    return s.length() <= 80 ? s : s.substring(0, 80) + "...";
  }
}

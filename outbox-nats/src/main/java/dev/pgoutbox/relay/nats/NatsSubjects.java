package dev.pgoutbox.relay.nats;

import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;

/**
 * What a NATS subject may hold, and the injective escape {@link NatsRouting#byTypes} applies to an
 * event's types: {@code %}, {@code *}, {@code >}, whitespace, control characters and the dots that
 * may not separate tokens become {@code %XX} per UTF-8 byte; percent-decoding gives the value back.
 */
final class NatsSubjects {

  private NatsSubjects() {}

  /**
   * Why {@code subject} is not a literal subject NATS can publish to, or null if it is one: it must
   * be non-empty, its dot-separated tokens non-empty, free of {@code *} and {@code >} (wildcards in
   * a subscription, reserved anywhere), whitespace and control characters.
   */
  static @Nullable String problem(String subject) {
    if (subject.isEmpty()) {
      return "it is empty";
    }
    int token = 1;
    int tokenStart = 0;
    for (int i = 0; i < subject.length(); ) {
      int cp = subject.codePointAt(i);
      if (cp == '.') {
        if (i == tokenStart) {
          return "token " + token + " is empty";
        }
        token++;
        tokenStart = i + 1;
      } else if (cp == '*' || cp == '>') {
        return "token " + token + " holds the wildcard '" + (char) cp + "'";
      } else if (isSpaceOrControl(cp)) {
        return "token " + token + " holds whitespace or a control character (" + unicode(cp) + ")";
      }
      i += Character.charCount(cp);
    }
    if (tokenStart == subject.length()) {
      return "token " + token + " is empty";
    }
    return null;
  }

  /** {@code value} as exactly one token: every dot is escaped too. */
  static String token(String field, String value) {
    return escape(field, value, true);
  }

  /**
   * {@code value} as one or more tokens: a dot between two characters other than dots separates
   * tokens ({@code order.created}); a leading, trailing or repeated dot is escaped.
   */
  static String tokens(String field, String value) {
    return escape(field, value, false);
  }

  private static String escape(String field, String value, boolean oneToken) {
    if (value.isEmpty()) {
      throw new IllegalArgumentException(
          field + " '' cannot be sent as a NATS subject token: it is empty");
    }
    StringBuilder b = new StringBuilder(value.length() + 8);
    for (int i = 0; i < value.length(); ) {
      int cp = value.codePointAt(i);
      int n = Character.charCount(cp);
      boolean escape =
          cp == '%'
              || cp == '*'
              || cp == '>'
              || isSpaceOrControl(cp)
              || (cp == '.'
                  && (oneToken || i == 0 || i + 1 == value.length() || value.charAt(i - 1) == '.'));
      if (escape) {
        for (byte octet : value.substring(i, i + n).getBytes(StandardCharsets.UTF_8)) {
          b.append('%').append(Character.toUpperCase(Character.forDigit((octet >> 4) & 0xF, 16)));
          b.append(Character.toUpperCase(Character.forDigit(octet & 0xF, 16)));
        }
      } else {
        b.appendCodePoint(cp);
      }
      i += n;
    }
    return b.toString();
  }

  private static boolean isSpaceOrControl(int cp) {
    return Character.isWhitespace(cp) || Character.isSpaceChar(cp) || Character.isISOControl(cp);
  }

  private static String unicode(int cp) {
    return String.format("U+%04X", cp);
  }
}

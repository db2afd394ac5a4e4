package dev.pgoutbox.core.internal;

import java.util.Locale;
import org.jspecify.annotations.Nullable;

/** Checks of the strings pgoutbox hands to PostgreSQL; each returns a message, or null if fine. */
public final class Texts {

  private Texts() {}

  /**
   * Checks a required text column value: present, not blank, at most {@code maxChars} characters
   * (counted as PostgreSQL counts them, in code points) and storable.
   */
  public static @Nullable String requiredProblem(
      String field, @Nullable String value, int maxChars) {
    if (value == null) {
      return field + " must not be null";
    }
    if (value.isBlank()) {
      return field + " must not be blank";
    }
    int length = value.codePointCount(0, value.length());
    if (length > maxChars) {
      return field + " must be at most " + maxChars + " characters, was " + length;
    }
    return unstorableProblem(field, value);
  }

  /**
   * Checks that PostgreSQL stores {@code value} unchanged: no U+0000 (text and jsonb refuse it) and
   * no unpaired UTF-16 surrogate (which would reach the server as {@code ?}).
   */
  public static @Nullable String unstorableProblem(String field, String value) {
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c == '\u0000') {
        return field + " must not contain U+0000 (PostgreSQL cannot store it), found at index " + i;
      }
      if (Character.isHighSurrogate(c)) {
        if (i + 1 < value.length() && Character.isLowSurrogate(value.charAt(i + 1))) {
          i++;
          continue;
        }
        return unpaired(field, c, i);
      }
      if (Character.isLowSurrogate(c)) {
        return unpaired(field, c, i);
      }
    }
    return null;
  }

  /**
   * The length of {@code value} in UTF-8, counted without encoding it (an unpaired surrogate counts
   * as the 3 bytes of its replacement).
   */
  public static long utf8Length(String value) {
    long bytes = value.length();
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c >= 0x80) {
        if (c < 0x800) {
          bytes += 1;
        } else if (Character.isHighSurrogate(c)
            && i + 1 < value.length()
            && Character.isLowSurrogate(value.charAt(i + 1))) {
          bytes += 2; // 4 bytes for the pair of 2 chars.
          i++;
        } else {
          bytes += 2;
        }
      }
    }
    return bytes;
  }

  private static String unpaired(String field, char c, int index) {
    return field
        + " must not contain an unpaired surrogate (not valid UTF-8), found "
        + String.format(Locale.ROOT, "\\u%04x", (int) c)
        + " at index "
        + index;
  }

  /** {@code value} with control characters and lone surrogates escaped, cut after 80 characters. */
  public static String printable(String value) {
    StringBuilder out = new StringBuilder();
    int limit = Math.min(value.length(), 80);
    for (int i = 0; i < limit; i++) {
      char c = value.charAt(i);
      if (Character.isISOControl(c) || Character.isSurrogate(c)) {
        out.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
      } else {
        out.append(c);
      }
    }
    return value.length() > limit ? out + "..." : out.toString();
  }
}

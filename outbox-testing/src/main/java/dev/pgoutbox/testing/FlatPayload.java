package dev.pgoutbox.testing;

import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;

/**
 * Reads {@code aggregate}, {@code seq} and {@code written_at} from a flat JSON object without
 * building a tree: the checker's fast path, so checking a run costs little next to what it checks.
 * It answers only for the plain shape the writers produce (string {@code aggregate}, integer {@code
 * seq} and {@code written_at}, no escapes, no nested values, the last of duplicate keys wins, as
 * Jackson's tree does); for anything else it returns null and the checker parses with Jackson.
 */
final class FlatPayload {

  final String aggregate;
  final int seq;
  final @Nullable Long writtenAt;

  private FlatPayload(String aggregate, int seq, @Nullable Long writtenAt) {
    this.aggregate = aggregate;
    this.seq = seq;
    this.writtenAt = writtenAt;
  }

  /** The three fields, or null when the payload is not of the plain shape (or lacks one). */
  static @Nullable FlatPayload parse(byte[] json) {
    int i = skipSpace(json, 0);
    if (i >= json.length || json[i] != '{') {
      return null;
    }
    String aggregate = null;
    long seq = Long.MIN_VALUE;
    Long writtenAt = null;
    i = skipSpace(json, i + 1);
    if (i < json.length && json[i] == '}') {
      return null;
    }
    while (true) {
      // "key"
      if (i >= json.length || json[i] != '"') {
        return null;
      }
      int keyStart = i + 1;
      int keyEnd = endOfString(json, keyStart);
      if (keyEnd < 0) {
        return null;
      }
      i = skipSpace(json, keyEnd + 1);
      if (i >= json.length || json[i] != ':') {
        return null;
      }
      i = skipSpace(json, i + 1);
      if (i >= json.length) {
        return null;
      }
      byte first = json[i];
      int valueEnd;
      if (first == '"') {
        valueEnd = endOfString(json, i + 1);
        if (valueEnd < 0) {
          return null;
        }
        if (is(json, keyStart, keyEnd, "aggregate")) {
          aggregate = new String(json, i + 1, valueEnd - i - 1, StandardCharsets.UTF_8);
        } else if (is(json, keyStart, keyEnd, "seq") || is(json, keyStart, keyEnd, "written_at")) {
          return null; // a string where a number belongs: let Jackson decide
        }
        i = valueEnd + 1;
      } else if (first == '-' || (first >= '0' && first <= '9')) {
        int start = i;
        if (first == '-') {
          i++;
        }
        long value = 0;
        int digits = 0;
        while (i < json.length && json[i] >= '0' && json[i] <= '9') {
          value = value * 10 + (json[i] - '0');
          digits++;
          i++;
        }
        if (digits == 0 || digits > 18) {
          return null;
        }
        if (i < json.length && (json[i] == '.' || json[i] == 'e' || json[i] == 'E')) {
          return null; // not an integer
        }
        if (json[start] == '-') {
          value = -value;
        }
        if (is(json, keyStart, keyEnd, "seq")) {
          if (value < Integer.MIN_VALUE || value > Integer.MAX_VALUE) {
            return null;
          }
          seq = value;
        } else if (is(json, keyStart, keyEnd, "written_at")) {
          writtenAt = value;
        } else if (is(json, keyStart, keyEnd, "aggregate")) {
          return null;
        }
      } else {
        return null; // objects, arrays, true/false/null: not the plain shape
      }
      i = skipSpace(json, i);
      if (i >= json.length) {
        return null;
      }
      if (json[i] == '}') {
        break;
      }
      if (json[i] != ',') {
        return null;
      }
      i = skipSpace(json, i + 1);
    }
    if (aggregate == null || seq == Long.MIN_VALUE) {
      return null;
    }
    return new FlatPayload(aggregate, (int) seq, writtenAt);
  }

  /** Index of the closing quote of a string starting at {@code from}; -1 if escaped or open. */
  private static int endOfString(byte[] json, int from) {
    for (int i = from; i < json.length; i++) {
      if (json[i] == '"') {
        return i;
      }
      if (json[i] == '\\' || (json[i] >= 0 && json[i] < 0x20)) {
        return -1;
      }
    }
    return -1;
  }

  private static int skipSpace(byte[] json, int i) {
    while (i < json.length
        && (json[i] == ' ' || json[i] == '\n' || json[i] == '\r' || json[i] == '\t')) {
      i++;
    }
    return i;
  }

  private static boolean is(byte[] json, int start, int end, String key) {
    if (end - start != key.length()) {
      return false;
    }
    for (int k = 0; k < key.length(); k++) {
      if (json[start + k] != key.charAt(k)) {
        return false;
      }
    }
    return true;
  }
}

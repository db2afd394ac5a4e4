package dev.pgoutbox.relay.kafka;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * Makes a legal Kafka topic name (ASCII letters, digits, {@code .}, {@code _}, {@code -}, at most
 * {@value #MAX_LENGTH} characters, not {@code .} or {@code ..}) of an aggregate type, which the
 * writer lets hold any text.
 */
final class KafkaTopics {

  /** Kafka's longest topic name. */
  static final int MAX_LENGTH = 249;

  private KafkaTopics() {}

  /**
   * {@code prefix + aggregateType} when that is a legal topic name (every name that worked before);
   * otherwise each character of the aggregate type that a topic cannot hold written as {@code _XX}
   * per UTF-8 byte ({@code "Bestellung Ü"} becomes {@code Bestellung_20_C3_9C}), and a name still
   * too long cut and ended with {@code _} and 16 hex digits of the SHA-256 of the aggregate type.
   */
  static String name(String prefix, String aggregateType) {
    String plain = prefix + aggregateType;
    if (legal(plain)) {
      return plain;
    }
    StringBuilder b = new StringBuilder(prefix.length() + aggregateType.length() * 3);
    b.append(prefix);
    for (byte octet : aggregateType.getBytes(StandardCharsets.UTF_8)) {
      int u = octet & 0xFF;
      if (u < 0x80 && legalChar((char) u) && u != '_') {
        b.append((char) u);
      } else {
        b.append('_').append(HexFormat.of().withUpperCase().toHexDigits((byte) u));
      }
    }
    String escaped = b.toString();
    if (escaped.length() <= MAX_LENGTH && legal(escaped)) {
      return escaped;
    }
    String hash = HexFormat.of().formatHex(sha256(aggregateType), 0, 8);
    int keep = Math.max(0, MAX_LENGTH - 1 - hash.length());
    return escaped.substring(0, Math.min(keep, escaped.length())) + "_" + hash;
  }

  static boolean legal(String topic) {
    if (topic.isEmpty() || topic.length() > MAX_LENGTH || topic.equals(".") || topic.equals("..")) {
      return false;
    }
    for (int i = 0; i < topic.length(); i++) {
      if (!legalChar(topic.charAt(i))) {
        return false;
      }
    }
    return true;
  }

  private static boolean legalChar(char c) {
    return (c >= 'a' && c <= 'z')
        || (c >= 'A' && c <= 'Z')
        || (c >= '0' && c <= '9')
        || c == '.'
        || c == '_'
        || c == '-';
  }

  private static byte[] sha256(String s) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is a required JDK algorithm", e);
    }
  }
}

package dev.pgoutbox.relay.wal;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Reads the messages of PostgreSQL's {@code pgoutput} plugin, protocol version 1, that the WAL
 * reader needs: Begin, Relation, Insert, Commit, and logical decoding messages (sent only when the
 * stream asks for them, {@code messages 'true'}). Every other message (Origin, Type, Update,
 * Delete, Truncate) is returned as {@link Ignored}: the publication sends inserts only, and nothing
 * else changes what the reader publishes.
 */
final class PgOutputDecoder {

  private PgOutputDecoder() {}

  /** One decoded message. */
  sealed interface Message permits Begin, Relation, Insert, Commit, LogicalMessage, Ignored {}

  /** A transaction starts; its changes follow, then its {@link Commit}. */
  record Begin(long finalLsn, long commitTimeMicros, int xid) implements Message {}

  /** The layout of a table whose changes follow (sent before its first change, again on DDL). */
  record Relation(int id, String namespace, String name, List<String> columns) implements Message {}

  /** A row inserted into relation {@code relationId}: each column's text, or null. */
  record Insert(int relationId, @Nullable String[] values) implements Message {}

  /** The transaction committed; {@code endLsn} is what a reader confirms once it is settled. */
  record Commit(long commitLsn, long endLsn, long commitTimeMicros) implements Message {}

  /**
   * A logical decoding message ({@code pg_logical_emit_message}): transactional ones come between
   * their transaction's Begin and Commit; {@code content} is a view of the stream's bytes.
   */
  record LogicalMessage(boolean transactional, long lsn, String prefix, ByteBuffer content)
      implements Message {}

  /** A message the reader does not need, by its type byte. */
  record Ignored(char type) implements Message {}

  /**
   * Decodes the message in {@code buffer}, from its position to its limit.
   *
   * @throws IllegalArgumentException if the message is truncated or malformed
   */
  static Message decode(ByteBuffer buffer) {
    try {
      char type = (char) buffer.get();
      return switch (type) {
        case 'B' -> new Begin(buffer.getLong(), buffer.getLong(), buffer.getInt());
        case 'C' -> {
          buffer.get(); // flags, unused
          yield new Commit(buffer.getLong(), buffer.getLong(), buffer.getLong());
        }
        case 'R' -> relation(buffer);
        case 'I' -> insert(buffer);
        case 'M' -> logicalMessage(buffer);
        default -> new Ignored(type);
      };
    } catch (java.nio.BufferUnderflowException e) {
      throw new IllegalArgumentException("pgoutput message truncated", e);
    }
  }

  private static LogicalMessage logicalMessage(ByteBuffer buffer) {
    boolean transactional = (buffer.get() & 1) != 0;
    long lsn = buffer.getLong();
    String prefix = string(buffer);
    int length = buffer.getInt();
    if (length < 0 || length > buffer.remaining()) {
      throw new IllegalArgumentException(
          "pgoutput message content of " + length + " bytes is truncated");
    }
    ByteBuffer content = buffer.slice(buffer.position(), length);
    buffer.position(buffer.position() + length);
    return new LogicalMessage(transactional, lsn, prefix, content);
  }

  private static Relation relation(ByteBuffer buffer) {
    int id = buffer.getInt();
    String namespace = string(buffer);
    String name = string(buffer);
    buffer.get(); // replica identity
    int count = Short.toUnsignedInt(buffer.getShort());
    List<String> columns = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      buffer.get(); // flags (part of the key)
      columns.add(string(buffer));
      buffer.getInt(); // type oid
      buffer.getInt(); // type modifier
    }
    return new Relation(id, namespace.isEmpty() ? "pg_catalog" : namespace, name, columns);
  }

  private static Insert insert(ByteBuffer buffer) {
    int relationId = buffer.getInt();
    char kind = (char) buffer.get();
    if (kind != 'N') {
      throw new IllegalArgumentException("insert without a new tuple ('" + kind + "')");
    }
    int count = Short.toUnsignedInt(buffer.getShort());
    @Nullable String[] values = new String[count];
    for (int i = 0; i < count; i++) {
      char column = (char) buffer.get();
      switch (column) {
        case 'n', 'u' -> values[i] = null;
        case 't' -> {
          int length = buffer.getInt();
          values[i] = utf8(buffer, length);
        }
        default -> throw new IllegalArgumentException("unknown tuple column kind '" + column + "'");
      }
    }
    return new Insert(relationId, values);
  }

  private static String string(ByteBuffer buffer) {
    int start = buffer.position();
    int end = start;
    while (buffer.get(end) != 0) {
      end++;
    }
    String value = utf8At(buffer, start, end - start);
    buffer.position(end + 1);
    return value;
  }

  private static String utf8(ByteBuffer buffer, int length) {
    String value = utf8At(buffer, buffer.position(), length);
    buffer.position(buffer.position() + length);
    return value;
  }

  private static String utf8At(ByteBuffer buffer, int index, int length) {
    if (length < 0 || index + length > buffer.limit()) {
      throw new IllegalArgumentException("pgoutput value of " + length + " bytes is truncated");
    }
    if (buffer.hasArray()) {
      return new String(
          buffer.array(), buffer.arrayOffset() + index, length, StandardCharsets.UTF_8);
    }
    byte[] bytes = new byte[length];
    buffer.get(index, bytes);
    return new String(bytes, StandardCharsets.UTF_8);
  }
}

package dev.pgoutbox.core.internal;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.UUID;

/**
 * The message transport's one codec: the statement the writer sends, and the layout of each event's
 * message, which the WAL relay decodes. The content is {@code bytea}, not text: the relay slices
 * each field by its length without scanning or unescaping the payload (a 1 MiB payload is copied,
 * never parsed), and the server passes the bytes through without an encoding conversion.
 *
 * <p>Layout (big-endian), version 1:
 *
 * <pre>
 * int64  created_at: microseconds since 2000-01-01 00:00:00 UTC, the writer's transaction time
 *        (pg_catalog.timestamptz_send(pg_catalog.now()), prepended by the server)
 * int8   version = 1
 * int64, int64  id (UUID, most then least significant bits)
 * then aggregate_type, aggregate_id, event_type, payload (JSON), headers (JSON object), each as
 * int32 length + that many bytes of UTF-8
 * </pre>
 *
 * <p>The statement names every function with {@code pg_catalog} and uses no operator, as the
 * inserts do ({@link EventInserts}): it runs under the host's {@code search_path}.
 */
public final class EventMessages {

  /** The layout's version byte. */
  public static final byte VERSION = 1;

  /** 2000-01-01T00:00Z, PostgreSQL's epoch for timestamps, in microseconds since 1970. */
  private static final long PG_EPOCH_MICROS = 946_684_800_000_000L;

  private static final String EMIT =
      "pg_catalog.pg_logical_emit_message(true, cast(? as pg_catalog.text),"
          + " pg_catalog.byteacat(pg_catalog.timestamptz_send(pg_catalog.now()), %s))";

  private EventMessages() {}

  /** One event's content, without the created_at the server prepends. */
  public static byte[] encode(
      UUID id,
      String aggregateType,
      String aggregateId,
      String eventType,
      String payload,
      String headers) {
    byte[][] fields = {
      utf8(aggregateType), utf8(aggregateId), utf8(eventType), utf8(payload), utf8(headers)
    };
    int size = 1 + 16;
    for (byte[] field : fields) {
      size += 4 + field.length;
    }
    ByteBuffer out = ByteBuffer.allocate(size);
    out.put(VERSION);
    out.putLong(id.getMostSignificantBits()).putLong(id.getLeastSignificantBits());
    for (byte[] field : fields) {
      out.putInt(field.length).put(field);
    }
    return out.array();
  }

  /**
   * The statement that emits {@code count} messages in order, in the caller's transaction. Binds:
   * the prefix, then each event's content ({@code bytea}). One event: a plain call; several: a
   * count over a sorted {@code VALUES} list, so the calls run in the list's order.
   */
  public static String statement(int count) {
    if (count == 1) {
      return "select " + EMIT.formatted("cast(? as pg_catalog.bytea)");
    }
    StringBuilder values = new StringBuilder();
    for (int i = 1; i <= count; i++) {
      values
          .append(i == 1 ? "" : ", ")
          .append('(')
          .append(i)
          .append(", cast(? as pg_catalog.bytea))");
    }
    return "select pg_catalog.count("
        + EMIT.formatted("m.c")
        + ") from (select v.c from (values "
        + values
        + ") as v(n, c) order by v.n) as m";
  }

  /** The statement's binds: the prefix, then the contents. */
  public static Object[] binds(String prefix, List<byte[]> contents) {
    Object[] binds = new Object[contents.size() + 1];
    binds[0] = prefix;
    for (int i = 0; i < contents.size(); i++) {
      binds[i + 1] = contents.get(i);
    }
    return binds;
  }

  /** One decoded event, as the row it would have been. */
  public record Decoded(
      UUID id,
      OffsetDateTime createdAt,
      String aggregateType,
      String aggregateId,
      String eventType,
      String payload,
      String headers) {}

  /**
   * Decodes a message's content, from {@code content}'s position to its limit.
   *
   * @throws IllegalArgumentException naming what is wrong: truncated, an unknown version, a field
   *     length out of range, bytes left over
   */
  public static Decoded decode(ByteBuffer content) {
    try {
      long micros = content.getLong();
      byte version = content.get();
      if (version != VERSION) {
        throw new IllegalArgumentException(
            "message version " + version + ", this relay reads version " + VERSION);
      }
      UUID id = new UUID(content.getLong(), content.getLong());
      String aggregateType = field(content, "aggregate_type");
      String aggregateId = field(content, "aggregate_id");
      String eventType = field(content, "event_type");
      String payload = field(content, "payload");
      String headers = field(content, "headers");
      if (content.hasRemaining()) {
        throw new IllegalArgumentException(
            content.remaining() + " byte(s) after the headers of event " + id);
      }
      Instant createdAt = Instant.EPOCH.plus(PG_EPOCH_MICROS + micros, ChronoUnit.MICROS);
      return new Decoded(
          id,
          OffsetDateTime.ofInstant(createdAt, ZoneOffset.UTC),
          aggregateType,
          aggregateId,
          eventType,
          payload,
          headers);
    } catch (BufferUnderflowException e) {
      throw new IllegalArgumentException("message truncated", e);
    } catch (java.time.DateTimeException | ArithmeticException e) {
      throw new IllegalArgumentException("created_at out of range", e);
    }
  }

  private static String field(ByteBuffer content, String name) {
    int length = content.getInt();
    if (length < 0 || length > content.remaining()) {
      throw new IllegalArgumentException(
          name + " is " + length + " bytes, " + content.remaining() + " remain in the message");
    }
    String value;
    if (content.hasArray()) {
      value =
          new String(
              content.array(),
              content.arrayOffset() + content.position(),
              length,
              StandardCharsets.UTF_8);
    } else {
      byte[] bytes = new byte[length];
      content.get(content.position(), bytes);
      value = new String(bytes, StandardCharsets.UTF_8);
    }
    content.position(content.position() + length);
    return value;
  }

  private static byte[] utf8(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }
}

package dev.pgoutbox.relay.wal;

import dev.pgoutbox.relay.internal.ClaimedRow;
import java.time.DateTimeException;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeFormatterBuilder;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoField;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * Turns decoded inserts of {@code <schema>.outbox_events} into the rows the relay publishes,
 * finding each column by name in the latest {@link PgOutputDecoder.Relation} (a migration that adds
 * a column changes the layout; PostgreSQL sends the relation again). Inserts into other tables of
 * the publication are ignored. Not thread-safe: one per reader.
 */
final class WalRows {

  /** Text output of timestamptz with DateStyle ISO: {@code 2026-12-01 11:17:04.123456+00}. */
  static final DateTimeFormatter TIMESTAMPTZ =
      new DateTimeFormatterBuilder()
          .appendPattern("uuuu-MM-dd HH:mm:ss")
          .optionalStart()
          .appendFraction(ChronoField.NANO_OF_SECOND, 0, 9, true)
          .optionalEnd()
          .appendOffset("+HH:mm:ss", "+00")
          .toFormatter();

  private final String schema;
  private final Map<Integer, Layout> layouts = new HashMap<>();

  /**
   * The last {@code created_at} read and its value: the events of one transaction share it, so a
   * batch of them is parsed once.
   */
  private @Nullable String lastCreatedAtText;

  private @Nullable OffsetDateTime lastCreatedAt;

  WalRows(String schema) {
    this.schema = schema;
  }

  /**
   * Remembers a relation's layout (only the outbox table's matters).
   *
   * @return whether it is the outbox table's and one was known already: {@code pgoutput} sends a
   *     relation again after its table or a publication of it changed (or its cache entry was
   *     invalidated for another reason, a vacuum's statistics)
   */
  boolean relation(PgOutputDecoder.Relation relation) {
    if (!relation.namespace().equals(schema) || !relation.name().equals("outbox_events")) {
      layouts.remove(relation.id());
      return false;
    }
    boolean again = !layouts.isEmpty();
    layouts.put(relation.id(), new Layout(relation.columns()));
    return again;
  }

  /**
   * The row an insert made, or null when it is not an insert into the outbox table or is already
   * processed. {@link ClaimedRow#due()} is false for a row born dead, parked or with a retry time,
   * or with a {@code created_at} outside the ISO form of years 1 to 9999 (written by hand: a
   * restore, a data fix; {@code Outbox} writes none of them): such a row is the drainer's, which
   * applies the table relay's rules to it, and its aggregate waits behind it.
   *
   * @throws IllegalStateException if the row lacks its id or position (the table is not the
   *     outbox's)
   */
  @Nullable ClaimedRow row(PgOutputDecoder.Insert insert) {
    Layout layout = layouts.get(insert.relationId());
    if (layout == null) {
      return null;
    }
    String[] v = insert.values();
    String id = layout.value(v, layout.id);
    String position = layout.value(v, layout.position);
    if (id == null || position == null) {
      throw new IllegalStateException(
          "an insert into " + schema + ".outbox_events came without its id or position");
    }
    if (layout.value(v, layout.processedAt) != null) {
      return null;
    }
    String attempts = layout.value(v, layout.attempts);
    String createdAtText = layout.value(v, layout.createdAt);
    OffsetDateTime createdAt =
        createdAtText == null ? OffsetDateTime.now() : createdAt(createdAtText);
    // A created_at this parser cannot read (infinity, a date BC, a year past 9999: rows written
    // by hand) sends the row to the drainer, which reads it as the table relay does. Throwing here
    // stopped the reader on that row for good.
    boolean fastPath =
        createdAt != null
            && layout.value(v, layout.deadAt) == null
            && layout.value(v, layout.retryAfter) == null
            && !"t".equals(layout.value(v, layout.parked));
    return new ClaimedRow(
        UUID.fromString(id),
        Long.parseLong(position),
        orEmpty(layout.value(v, layout.aggregateType)),
        orEmpty(layout.value(v, layout.aggregateId)),
        orEmpty(layout.value(v, layout.eventType)),
        orNull(layout.value(v, layout.payload)),
        layout.value(v, layout.headers),
        attempts == null ? 0 : Integer.parseInt(attempts),
        createdAt == null ? OffsetDateTime.now() : createdAt, // the drainer reads the real one
        fastPath);
  }

  private @Nullable OffsetDateTime createdAt(String text) {
    if (!text.equals(lastCreatedAtText)) {
      lastCreatedAt = timestamptzOrNull(text);
      lastCreatedAtText = text;
    }
    return lastCreatedAt;
  }

  /** Parses PostgreSQL's ISO text of a {@code timestamptz}. */
  static OffsetDateTime timestamptz(String text) {
    OffsetDateTime fast = timestamptzFast(text);
    return fast != null ? fast : OffsetDateTime.parse(text, TIMESTAMPTZ);
  }

  /**
   * {@link #TIMESTAMPTZ}'s form read by hand ({@code DateTimeFormatter} cost more per row than the
   * rest of the decoding); null for any other text, which the formatter then reads or refuses.
   */
  static @Nullable OffsetDateTime timestamptzFast(String t) {
    int n = t.length();
    if (n < 22
        || t.charAt(4) != '-'
        || t.charAt(7) != '-'
        || t.charAt(10) != ' '
        || t.charAt(13) != ':'
        || t.charAt(16) != ':') {
      return null;
    }
    int year = digits(t, 0, 4);
    int month = digits(t, 5, 2);
    int day = digits(t, 8, 2);
    int hour = digits(t, 11, 2);
    int minute = digits(t, 14, 2);
    int second = digits(t, 17, 2);
    int i = 19;
    int nanos = 0;
    if (t.charAt(i) == '.') {
      int start = ++i;
      while (i < n && i - start < 9 && Character.isDigit(t.charAt(i))) {
        nanos = nanos * 10 + (t.charAt(i++) - '0');
      }
      if (i == start) {
        return null;
      }
      for (int k = i - start; k < 9; k++) {
        nanos *= 10;
      }
    }
    if (i + 3 > n || (t.charAt(i) != '+' && t.charAt(i) != '-')) {
      return null;
    }
    int sign = t.charAt(i) == '-' ? -1 : 1;
    int[] offset = new int[3];
    offset[0] = digits(t, i + 1, 2);
    i += 3;
    for (int k = 1; k < 3 && i < n; k++, i += 3) {
      if (i + 3 > n || t.charAt(i) != ':') {
        return null;
      }
      offset[k] = digits(t, i + 1, 2);
    }
    if (i != n
        || (year | month | day | hour | minute | second | offset[0] | offset[1] | offset[2]) < 0) {
      return null;
    }
    try {
      return OffsetDateTime.of(
          year,
          month,
          day,
          hour,
          minute,
          second,
          nanos,
          ZoneOffset.ofHoursMinutesSeconds(sign * offset[0], sign * offset[1], sign * offset[2]));
    } catch (DateTimeException e) {
      return null;
    }
  }

  /** The decimal number of {@code count} digits at {@code from}; -1 if one is not a digit. */
  private static int digits(String t, int from, int count) {
    int value = 0;
    for (int k = from; k < from + count; k++) {
      char c = t.charAt(k);
      if (c < '0' || c > '9') {
        return -1;
      }
      value = value * 10 + (c - '0');
    }
    return value;
  }

  /** {@link #timestamptz}, or null for text outside its form. */
  static @Nullable OffsetDateTime timestamptzOrNull(String text) {
    try {
      return timestamptz(text);
    } catch (DateTimeParseException e) {
      return null;
    }
  }

  private static String orEmpty(@Nullable String value) {
    return value == null ? "" : value;
  }

  private static String orNull(@Nullable String value) {
    return value == null ? "null" : value;
  }

  /** Where each column the relay reads sits in the relation; -1 when absent. */
  private static final class Layout {
    final int id;
    final int position;
    final int aggregateType;
    final int aggregateId;
    final int eventType;
    final int payload;
    final int headers;
    final int attempts;
    final int createdAt;
    final int processedAt;
    final int deadAt;
    final int retryAfter;
    final int parked;

    Layout(List<String> columns) {
      id = columns.indexOf("id");
      position = columns.indexOf("position");
      aggregateType = columns.indexOf("aggregate_type");
      aggregateId = columns.indexOf("aggregate_id");
      eventType = columns.indexOf("event_type");
      payload = columns.indexOf("payload");
      headers = columns.indexOf("headers");
      attempts = columns.indexOf("attempts");
      createdAt = columns.indexOf("created_at");
      processedAt = columns.indexOf("processed_at");
      deadAt = columns.indexOf("dead_at");
      retryAfter = columns.indexOf("retry_after");
      parked = columns.indexOf("parked");
    }

    @Nullable String value(@Nullable String[] values, int index) {
      return index < 0 || index >= values.length ? null : values[index];
    }
  }
}

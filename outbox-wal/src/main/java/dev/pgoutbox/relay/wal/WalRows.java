package dev.pgoutbox.relay.wal;

import dev.pgoutbox.relay.internal.ClaimedRow;
import java.time.OffsetDateTime;
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
        createdAtText == null ? OffsetDateTime.now() : timestamptzOrNull(createdAtText);
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

  /** Parses PostgreSQL's ISO text of a {@code timestamptz}. */
  static OffsetDateTime timestamptz(String text) {
    return OffsetDateTime.parse(text, TIMESTAMPTZ);
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

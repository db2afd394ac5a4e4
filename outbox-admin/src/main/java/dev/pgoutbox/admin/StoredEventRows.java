package dev.pgoutbox.admin;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import dev.pgoutbox.db.jooq.tables.OutboxEvents;
import java.io.IOException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.Record;
import org.jooq.impl.DSL;
import org.jspecify.annotations.Nullable;

/** How the admin reads an outbox row into a {@link StoredEvent}: the columns and their mapping. */
final class StoredEventRows {

  private static final ObjectReader HISTORY_READER = new ObjectMapper().reader();

  private StoredEventRows() {}

  /** The columns {@link #storedEvent} reads, the payload left out unless {@code withPayload}. */
  static List<Field<?>> fields(OutboxEvents t, boolean withPayload) {
    return List.of(
        t.ID,
        t.POSITION,
        t.AGGREGATE_TYPE,
        t.AGGREGATE_ID,
        t.EVENT_TYPE,
        t.HEADERS,
        withPayload ? t.PAYLOAD : DSL.inline((JSONB) null).as(t.PAYLOAD.getName()),
        t.ATTEMPTS,
        t.LAST_ERROR,
        t.CREATED_AT,
        t.RETRY_AFTER,
        t.DEAD_AT,
        t.PROCESSED_AT,
        t.PARKED,
        t.ERROR_HISTORY);
  }

  static List<Field<?>> fields(boolean withPayload) {
    return fields(OUTBOX_EVENTS, withPayload);
  }

  /** A row read with {@link #fields}. */
  static StoredEvent storedEvent(Record r, boolean withPayload) {
    JSONB headers = r.get(5, JSONB.class);
    JSONB payload = withPayload ? r.get(6, JSONB.class) : null;
    Boolean parked = r.get(13, Boolean.class);
    return new StoredEvent(
        r.get(0, UUID.class),
        r.get(1, Long.class),
        r.get(2, String.class),
        r.get(3, String.class),
        r.get(4, String.class),
        headers == null ? "{}" : headers.data(),
        payload == null ? null : payload.data(),
        r.get(7, Integer.class),
        r.get(8, String.class),
        r.get(9, OffsetDateTime.class).toInstant(),
        instant(r.get(10, OffsetDateTime.class)),
        instant(r.get(11, OffsetDateTime.class)),
        instant(r.get(12, OffsetDateTime.class)),
        Boolean.TRUE.equals(parked),
        failures(r.get(14, JSONB.class)));
  }

  /** The failed attempts in an {@code error_history} (schema version 13), oldest first. */
  private static List<StoredEvent.FailedAttempt> failures(@Nullable JSONB history) {
    if (history == null) {
      return List.of();
    }
    try {
      List<StoredEvent.FailedAttempt> failures = new ArrayList<>();
      for (JsonNode entry : HISTORY_READER.readTree(history.data())) {
        failures.add(
            new StoredEvent.FailedAttempt(
                entry.path("attempt").asInt(),
                OffsetDateTime.parse(entry.path("at").asText()).toInstant(),
                entry.path("error").asText(""),
                entry.path("dead").asBoolean()));
      }
      return List.copyOf(failures);
    } catch (IOException | RuntimeException e) {
      // A history written by hand that does not read is shown as one entry saying so.
      return List.of(
          new StoredEvent.FailedAttempt(
              0, Instant.EPOCH, "error_history unreadable: " + e.getMessage(), false));
    }
  }

  private static @Nullable Instant instant(@Nullable OffsetDateTime time) {
    return time == null ? null : time.toInstant();
  }
}

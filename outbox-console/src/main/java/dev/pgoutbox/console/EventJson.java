package dev.pgoutbox.console;

import static dev.pgoutbox.console.ConsoleAnswers.JSON;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.pgoutbox.admin.StoredEvent;
import java.time.Instant;
import org.jspecify.annotations.Nullable;

/** An event as the console's API shows it: payloads and header values only where allowed. */
final class EventJson {

  private final boolean showPayloads;

  EventJson(boolean showPayloads) {
    this.showPayloads = showPayloads;
  }

  ObjectNode event(StoredEvent e) {
    return event(e, false);
  }

  /** An event as JSON; {@code detail}: with its headers, as one event's page shows them. */
  ObjectNode event(StoredEvent e, boolean detail) {
    ObjectNode event = JSON.createObjectNode();
    event.put("id", e.id().toString());
    event.put("position", e.position());
    event.put("aggregate_type", e.aggregateType());
    event.put("aggregate_id", e.aggregateId());
    event.put("event_type", e.eventType());
    event.put("state", e.state());
    event.put("attempts", e.attempts());
    event.put("last_error", e.lastError());
    event.put("created_at", e.createdAt().toString());
    event.put("retry_after", text(e.retryAfter()));
    event.put("dead_at", text(e.deadAt()));
    event.put("processed_at", text(e.processedAt()));
    event.put("parked", e.parked());
    if (detail) {
      ArrayNode errors = event.putArray("errors");
      for (StoredEvent.FailedAttempt f : e.failures()) {
        errors
            .addObject()
            .put("attempt", f.attempt())
            .put("at", f.at().toString())
            .put("error", f.error())
            .put("dead", f.dead());
      }
      // Headers may carry credentials: their values only where payloads are shown, else the names.
      if (showPayloads) {
        event.put("headers", e.headers());
      } else {
        ArrayNode names = event.putArray("header_names");
        try {
          JSON.readTree(e.headers()).fieldNames().forEachRemaining(names::add);
        } catch (JsonProcessingException malformed) {
          names.add("(unreadable)");
        }
      }
    }
    if (showPayloads && e.payload() != null) {
      event.put("payload", e.payload());
    }
    event.put("payload_hidden", !showPayloads);
    return event;
  }

  static @Nullable String text(@Nullable Instant instant) {
    return instant == null ? null : instant.toString();
  }
}

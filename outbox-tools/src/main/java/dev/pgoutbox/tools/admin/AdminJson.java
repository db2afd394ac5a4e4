package dev.pgoutbox.tools.admin;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.pgoutbox.admin.RelayInstance;
import dev.pgoutbox.admin.StoredEvent;
import dev.pgoutbox.relay.WalSlotStats;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.time.Instant;
import org.jspecify.annotations.Nullable;

/** The JSON shapes of the admin's output, snake_case, times as ISO-8601 UTC. */
final class AdminJson {

  private static final ObjectMapper MAPPER =
      new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  private AdminJson() {}

  static ObjectNode object() {
    return MAPPER.createObjectNode();
  }

  static com.fasterxml.jackson.databind.node.ArrayNode array() {
    return MAPPER.createArrayNode();
  }

  static String write(JsonNode node) {
    try {
      return MAPPER.writeValueAsString(node);
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** An event; its payload only when it was read ({@code --payload}). */
  static ObjectNode event(StoredEvent e) {
    ObjectNode node = object();
    node.put("id", e.id().toString());
    node.put("position", e.position());
    node.put("aggregate_type", e.aggregateType());
    node.put("aggregate_id", e.aggregateId());
    node.put("event_type", e.eventType());
    node.put("state", e.state());
    node.put("attempts", e.attempts());
    node.put("last_error", e.lastError());
    node.put("created_at", time(e.createdAt()));
    node.put("retry_after", time(e.retryAfter()));
    node.put("dead_at", time(e.deadAt()));
    node.put("processed_at", time(e.processedAt()));
    node.put("parked", e.parked());
    var failures = node.putArray("errors");
    for (StoredEvent.FailedAttempt f : e.failures()) {
      ObjectNode failure = failures.addObject();
      failure.put("attempt", f.attempt());
      failure.put("at", time(f.at()));
      failure.put("error", f.error());
      failure.put("dead", f.dead());
    }
    node.set("headers", parse(e.headers()));
    if (e.payload() != null) {
      node.set("payload", parse(e.payload()));
    }
    return node;
  }

  static ObjectNode relay(RelayInstance r) {
    ObjectNode node = object();
    node.put("relay_name", r.relayName());
    node.put("instance_id", r.instanceId().toString());
    node.put("source", r.source());
    node.put("ordering", r.ordering());
    node.put("dead_letter_policy", r.deadLetterPolicy());
    node.put("started_at", time(r.startedAt()));
    node.put("heartbeat_at", time(r.heartbeatAt()));
    node.put("heartbeat_age_seconds", seconds(r.heartbeatAge()));
    node.put("alive", r.alive());
    return node;
  }

  static ObjectNode slot(WalSlotStats s) {
    ObjectNode node = object();
    node.put("slot_name", s.slotName());
    node.put("active", s.active());
    node.put("lag_bytes", s.lagBytes());
    node.put("lag_seconds", seconds(s.lagTime()));
    node.put("wal_status", s.walStatus());
    node.put("lost", s.lost());
    return node;
  }

  static double seconds(Duration d) {
    return d.toMillis() / 1000.0;
  }

  static @Nullable String time(@Nullable Instant instant) {
    return instant == null ? null : instant.toString();
  }

  private static JsonNode parse(String jsonText) {
    try {
      return MAPPER.readTree(jsonText);
    } catch (JsonProcessingException e) {
      return MAPPER.getNodeFactory().textNode(jsonText);
    }
  }
}

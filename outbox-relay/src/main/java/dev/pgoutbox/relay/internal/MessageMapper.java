package dev.pgoutbox.relay.internal;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgoutbox.relay.OutboxMessage;
import java.util.LinkedHashMap;
import java.util.Map;

/** Turns a claimed row into the message a publisher receives, or says why it cannot. */
public final class MessageMapper {

  private static final ObjectMapper JSON = new ObjectMapper();

  private MessageMapper() {}

  /**
   * The message ({@link Usable}), or an {@link Unusable} naming what is wrong with the row. Never
   * throws: whatever a hand-written row holds, it becomes that row's own dead letter, never the
   * batch's failure.
   */
  public static Mapped toMessage(ClaimedRow row) {
    if (row.attempts() < 0 || row.attempts() == Integer.MAX_VALUE) {
      return new Unusable(
          "attempts is "
              + row.attempts()
              + ", must be between 0 and "
              + (Integer.MAX_VALUE - 1)
              + " (OutboxAdmin.retry resets it)");
    }
    try {
      return new Usable(message(row, parseHeaders(row.headers())));
    } catch (RuntimeException e) {
      return new Unusable(e.getMessage() == null ? e.toString() : e.getMessage());
    }
  }

  /**
   * A message that describes {@code row} in logs and listener reports even when the row is
   * unusable: no headers, and the attempt number brought into range.
   */
  public static OutboxMessage forReport(ClaimedRow row) {
    return new OutboxMessage(
        row.id(),
        row.position(),
        row.aggregateType(),
        row.aggregateId(),
        row.eventType(),
        row.payload(),
        Map.of(),
        nextAttempt(row.attempts()),
        row.createdAt().toInstant());
  }

  /** {@code attempts + 1}, kept between 1 and {@link Integer#MAX_VALUE} for hostile rows. */
  public static int nextAttempt(int attempts) {
    return attempts < 0 ? 1 : attempts == Integer.MAX_VALUE ? attempts : attempts + 1;
  }

  /** The message for {@code row}, with {@code headers}; its attempt is the next one. */
  public static OutboxMessage message(ClaimedRow row, Map<String, String> headers) {
    return new OutboxMessage(
        row.id(),
        row.position(),
        row.aggregateType(),
        row.aggregateId(),
        row.eventType(),
        row.payload(),
        headers,
        row.attempts() + 1,
        row.createdAt().toInstant());
  }

  private static Map<String, String> parseHeaders(String headers) {
    // Most events carry no headers: PostgreSQL renders the empty jsonb object as "{}".
    if (headers == null || headers.equals("{}")) {
      return Map.of();
    }
    JsonNode node;
    try {
      node = JSON.readTree(headers);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("headers is not valid JSON: " + e.getOriginalMessage());
    }
    if (node == null || node.isNull()) {
      return Map.of();
    }
    if (!node.isObject()) {
      throw new IllegalArgumentException(
          "headers must be a JSON object of strings, was a JSON " + node.getNodeType());
    }
    Map<String, String> result = new LinkedHashMap<>();
    for (Map.Entry<String, JsonNode> field : node.properties()) {
      if (!field.getValue().isTextual()) {
        throw new IllegalArgumentException(
            "headers must be a JSON object of strings, but header '"
                + field.getKey()
                + "' is a JSON "
                + field.getValue().getNodeType());
      }
      result.put(field.getKey(), field.getValue().textValue());
    }
    return result;
  }

  /** What {@link #toMessage} makes of a row: a message to publish, or a reason it cannot be. */
  public sealed interface Mapped permits Usable, Unusable {}

  /** A row turned into the message a publisher receives. */
  public record Usable(OutboxMessage message) implements Mapped {}

  /** A row the relay cannot turn into a message; dead-lettered with {@code reason}. */
  public record Unusable(String reason) implements Mapped {}
}

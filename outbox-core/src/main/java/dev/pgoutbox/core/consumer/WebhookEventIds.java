package dev.pgoutbox.core.consumer;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.core.OutboxException;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * Reads the event id back from a webhook request, for the receiver's inbox. The id travels in the
 * {@value #HEADER} header; a receiver that sees the same key twice has seen the same event twice.
 *
 * <pre>{@code
 * UUID eventId = WebhookEventIds.eventId(exchange.getRequestHeaders()); // com.sun.net.httpserver
 * inbox.handleOnce(tx, "billing", eventId, () -> bill(order));
 * }</pre>
 */
public final class WebhookEventIds {

  /** The header that carries the event id: {@value}. */
  public static final String HEADER = "Idempotency-Key";

  private WebhookEventIds() {}

  /**
   * The event id in {@code headers}, looked up without regard to case (HTTP header names are
   * case-insensitive; most server APIs expose them as such a map).
   *
   * @throws OutboxException if the header is missing or is not a UUID
   */
  public static UUID eventId(Map<String, ? extends List<String>> headers) {
    requireNonNull(headers, "headers");
    List<String> values = headers.get(HEADER);
    if (values == null) {
      for (Map.Entry<String, ? extends List<String>> e : headers.entrySet()) {
        if (e.getKey() != null && e.getKey().equalsIgnoreCase(HEADER)) {
          values = e.getValue();
          break;
        }
      }
    }
    return eventId(values == null || values.isEmpty() ? null : values.get(0));
  }

  /**
   * The event id in the value of an {@value #HEADER} header.
   *
   * @throws OutboxException if the value is null or is not a UUID
   */
  public static UUID eventId(@Nullable String idempotencyKey) {
    if (idempotencyKey == null) {
      throw new OutboxException(
          "webhook request has no " + HEADER + " header; was it sent by pgoutbox?");
    }
    try {
      return UUID.fromString(idempotencyKey.trim());
    } catch (IllegalArgumentException e) {
      throw new OutboxException(
          HEADER + " header must be a pgoutbox event id (a UUID), was '" + idempotencyKey + "'", e);
    }
  }
}

package dev.pgoutbox.relay.webhook;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublisherSupport;
import java.net.URI;

/**
 * Chooses the URL an event is posted to. Replace it to send each event type, or each tenant, to its
 * own endpoint:
 *
 * <pre>{@code
 * WebhookRouting perType = m -> URI.create("https://hooks.example.com/" + m.eventType());
 * }</pre>
 *
 * <p>A routing function is called on the relay's thread and must not block; an exception it throws
 * fails that event permanently (it would throw again on retry).
 */
@FunctionalInterface
public interface WebhookRouting {

  /** The absolute {@code http} or {@code https} URL to POST {@code message} to. */
  URI uri(OutboxMessage message);

  /** Every event to one URL, the default. */
  static WebhookRouting fixed(URI endpoint) {
    requireNonNull(endpoint, "endpoint");
    String scheme = endpoint.getScheme();
    if (scheme == null || !(scheme.equals("http") || scheme.equals("https"))) {
      throw new IllegalArgumentException(
          "endpoint must be an absolute http or https URL, was "
              + PublisherSupport.redact(endpoint));
    }
    return message -> endpoint;
  }
}

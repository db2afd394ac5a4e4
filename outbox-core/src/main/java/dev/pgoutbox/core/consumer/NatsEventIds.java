package dev.pgoutbox.core.consumer;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.core.OutboxException;
import io.nats.client.Message;
import io.nats.client.impl.Headers;
import java.util.UUID;

/**
 * Reads the event id back from a message {@code dev.pgoutbox.relay.nats.NatsPublisher} sent, for
 * the consumer's inbox. The id travels in the {@value #HEADER} header, which JetStream also uses to
 * drop duplicates. Needs {@code io.nats:jnats} (an optional dependency of this module).
 *
 * <pre>{@code
 * Message msg = subscription.nextMessage(Duration.ofSeconds(1));
 * inbox.handleOnce(tx, "billing", NatsEventIds.eventId(msg), () -> bill(msg));
 * msg.ack();
 * }</pre>
 */
public final class NatsEventIds {

  /** The header that carries the event id: {@value}. */
  public static final String HEADER = "Nats-Msg-Id";

  private NatsEventIds() {}

  /**
   * The event id of {@code message}.
   *
   * @throws OutboxException if the header is missing or is not a UUID
   */
  public static UUID eventId(Message message) {
    requireNonNull(message, "message");
    Headers headers = message.getHeaders();
    String id = headers == null ? null : headers.getFirst(HEADER);
    if (id == null) {
      throw new OutboxException(
          "NATS message on "
              + message.getSubject()
              + " has no "
              + HEADER
              + " header; was it published by pgoutbox?");
    }
    try {
      return UUID.fromString(id);
    } catch (IllegalArgumentException e) {
      throw new OutboxException(HEADER + " header must be a UUID, was '" + id + "'", e);
    }
  }
}

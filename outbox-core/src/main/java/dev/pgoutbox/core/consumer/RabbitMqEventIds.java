package dev.pgoutbox.core.consumer;

import static java.util.Objects.requireNonNull;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Delivery;
import dev.pgoutbox.core.OutboxException;
import java.util.UUID;

/**
 * Reads the event id back from a message {@code dev.pgoutbox.relay.rabbitmq.RabbitMqPublisher}
 * sent, for the consumer's inbox. The id travels as the AMQP {@code message-id} property. Needs
 * {@code com.rabbitmq:amqp-client} (an optional dependency of this module).
 *
 * <pre>{@code
 * channel.basicConsume("billing", false, (tag, delivery) -> {
 *   inbox.handleOnce(tx, "billing", RabbitMqEventIds.eventId(delivery), () -> bill(delivery));
 *   channel.basicAck(delivery.getEnvelope().getDeliveryTag(), false);
 * }, tag -> {});
 * }</pre>
 */
public final class RabbitMqEventIds {

  private RabbitMqEventIds() {}

  /**
   * The event id of {@code delivery}.
   *
   * @throws OutboxException if the message has no {@code message-id} or it is not a UUID
   */
  public static UUID eventId(Delivery delivery) {
    requireNonNull(delivery, "delivery");
    return eventId(delivery.getProperties());
  }

  /**
   * The event id in a message's properties.
   *
   * @throws OutboxException if there is no {@code message-id} or it is not a UUID
   */
  public static UUID eventId(AMQP.BasicProperties properties) {
    requireNonNull(properties, "properties");
    String id = properties.getMessageId();
    if (id == null) {
      throw new OutboxException("AMQP message has no message-id; was it published by pgoutbox?");
    }
    try {
      return UUID.fromString(id);
    } catch (IllegalArgumentException e) {
      throw new OutboxException("AMQP message-id must be a UUID, was '" + id + "'", e);
    }
  }
}

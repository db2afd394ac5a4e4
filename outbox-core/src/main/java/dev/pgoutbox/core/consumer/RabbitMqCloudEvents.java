package dev.pgoutbox.core.consumer;

import static java.util.Objects.requireNonNull;

import com.rabbitmq.client.Delivery;
import dev.pgoutbox.core.OutboxException;
import java.util.Map;

/**
 * Reads a {@link CloudEvent} from a message {@code dev.pgoutbox.relay.rabbitmq.RabbitMqPublisher}
 * sent with the CloudEvents envelope, in binary content mode as the CloudEvents AMQP binding puts
 * it: attributes in message headers (AMQP application properties) {@value #PREFIX}{@code id},
 * {@code cloudEvents:source}, {@code cloudEvents:specversion}, {@code cloudEvents:type}, {@code
 * cloudEvents:subject}, {@code cloudEvents:time}, the data content type in the {@code content-type}
 * property, the data as the body. Needs {@code amqp-client}.
 */
public final class RabbitMqCloudEvents {

  /** The prefix of attribute headers in the AMQP binding: {@value}. */
  public static final String PREFIX = "cloudEvents:";

  private RabbitMqCloudEvents() {}

  /**
   * The CloudEvent in {@code delivery}.
   *
   * @throws OutboxException if a required attribute is missing or malformed
   */
  public static CloudEvent read(Delivery delivery) {
    requireNonNull(delivery, "delivery");
    Map<String, Object> headers = delivery.getProperties().getHeaders();
    String where = "AMQP message " + delivery.getProperties().getMessageId();
    return CloudEvent.fromBinary(
        PREFIX,
        name -> {
          Object value = headers == null ? null : headers.get(name);
          return value == null ? null : value.toString();
        },
        delivery.getProperties().getContentType(),
        delivery.getBody() == null ? new byte[0] : delivery.getBody(),
        where);
  }
}

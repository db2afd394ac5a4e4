package dev.pgoutbox.relay.rabbitmq;

import static java.util.Objects.requireNonNull;

/**
 * Where one event is published: an exchange and a routing key.
 *
 * @param exchange the exchange's name ({@code ""} is the default exchange, which routes by queue
 *     name)
 * @param routingKey the routing key, at most 255 bytes
 */
public record RabbitMqRoute(String exchange, String routingKey) {

  /** Checks both parts are present. */
  public RabbitMqRoute {
    requireNonNull(exchange, "exchange");
    requireNonNull(routingKey, "routingKey");
  }
}

package dev.pgoutbox.example.orders;

import dev.pgoutbox.relay.Publisher;

/**
 * The order service's connection to one broker: the relay's {@link Publisher} on one side, the
 * shipping consumer on the other, and a health check. One implementation per broker: {@link
 * KafkaLink}, {@link RabbitMqLink}, {@link NatsLink}.
 */
public interface BrokerLink extends AutoCloseable {

  /** E.g. {@code Kafka 127.0.0.1:9092, topic orders}. */
  String describe();

  /** The publisher the relay publishes with; closed by {@link #close()}. */
  Publisher publisher();

  /**
   * Starts consuming the order events and hands each to {@code shipping}, in order, acknowledging
   * it once applied (or ignored as a duplicate or refused as out of order). A database failure
   * leaves the event unacknowledged, to be delivered again.
   *
   * @return the running consumer; closing it stops consuming
   */
  AutoCloseable startConsumer(ShippingService shipping);

  /** Whether the broker answers now, with a word on what was checked. */
  Health health();

  /** Closes the publisher and every connection this link opened. */
  @Override
  void close();

  /**
   * A health check's answer.
   *
   * @param up whether the component works
   * @param detail what was checked, or the error
   */
  record Health(boolean up, String detail) {}
}

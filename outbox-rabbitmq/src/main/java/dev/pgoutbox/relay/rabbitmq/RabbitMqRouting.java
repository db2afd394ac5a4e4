package dev.pgoutbox.relay.rabbitmq;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.relay.OutboxMessage;

/**
 * Chooses the exchange and routing key of an event.
 *
 * <pre>{@code
 * RabbitMqRouting routing = RabbitMqRouting.byEventType("orders");           // topic exchange, key = event type
 * RabbitMqRouting sharded = RabbitMqRouting.byAggregateId("orders.sharded"); // consistent-hash exchange
 * RabbitMqRouting custom = m -> new RabbitMqRoute("outbox", m.aggregateType() + "." + m.eventType());
 * }</pre>
 *
 * <p>Called on the relay's thread; must not block. An exception it throws fails that event
 * permanently.
 */
@FunctionalInterface
public interface RabbitMqRouting {

  /** The exchange and routing key for {@code message}. */
  RabbitMqRoute route(OutboxMessage message);

  /**
   * Exchange {@code exchange}, routing key = the event type (e.g. {@code order.created}), for a
   * topic or direct exchange: the usual choice.
   */
  static RabbitMqRouting byEventType(String exchange) {
    requireNonNull(exchange, "exchange");
    return m -> new RabbitMqRoute(exchange, m.eventType());
  }

  /**
   * Exchange {@code exchange}, routing key = the aggregate id, for a consistent-hash exchange that
   * shards aggregates over queues while keeping each aggregate on one queue.
   */
  static RabbitMqRouting byAggregateId(String exchange) {
    requireNonNull(exchange, "exchange");
    return m -> new RabbitMqRoute(exchange, m.aggregateId());
  }
}

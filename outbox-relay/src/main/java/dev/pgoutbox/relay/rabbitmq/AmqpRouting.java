package dev.pgoutbox.relay.rabbitmq;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.relay.OutboxMessage;

/**
 * Chooses the exchange and routing key of an event.
 *
 * <pre>{@code
 * AmqpRouting routing = AmqpRouting.byEventType("orders");           // topic exchange, key = event type
 * AmqpRouting sharded = AmqpRouting.byAggregateId("orders.sharded"); // consistent-hash exchange
 * AmqpRouting custom = m -> new AmqpRoute("outbox", m.aggregateType() + "." + m.eventType());
 * }</pre>
 *
 * <p>Called on the relay's thread; must not block. An exception it throws fails that event
 * permanently.
 */
@FunctionalInterface
public interface AmqpRouting {

  /** The exchange and routing key for {@code message}. */
  AmqpRoute route(OutboxMessage message);

  /**
   * Exchange {@code exchange}, routing key = the event type (e.g. {@code order.created}), for a
   * topic or direct exchange: the usual choice.
   */
  static AmqpRouting byEventType(String exchange) {
    requireNonNull(exchange, "exchange");
    return m -> new AmqpRoute(exchange, m.eventType());
  }

  /**
   * Exchange {@code exchange}, routing key = the aggregate id, for a consistent-hash exchange that
   * shards aggregates over queues while keeping each aggregate on one queue.
   */
  static AmqpRouting byAggregateId(String exchange) {
    requireNonNull(exchange, "exchange");
    return m -> new AmqpRoute(exchange, m.aggregateId());
  }
}

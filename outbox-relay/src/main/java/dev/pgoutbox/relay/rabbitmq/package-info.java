/**
 * Publishes outbox events to RabbitMQ (AMQP 0-9-1) with {@code amqp-client} (an optional dependency
 * of this module): {@link dev.pgoutbox.relay.rabbitmq.RabbitMqPublisher} on the relay's side,
 * {@link dev.pgoutbox.relay.rabbitmq.AmqpEventIds} on the consumer's side.
 */
@NullMarked
package dev.pgoutbox.relay.rabbitmq;

import org.jspecify.annotations.NullMarked;

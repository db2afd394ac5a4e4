/**
 * Publishes outbox events to RabbitMQ (AMQP 0-9-1) with {@code amqp-client} (an optional dependency
 * of this module): {@link dev.pgoutbox.relay.rabbitmq.RabbitMqPublisher} on the relay's side,
 * {@link dev.pgoutbox.core.consumer.RabbitMqEventIds} on the consumer's side (in {@code
 * pgoutbox-core}, so a consumer needs no relay).
 */
@NullMarked
package dev.pgoutbox.relay.rabbitmq;

import org.jspecify.annotations.NullMarked;

/**
 * Publishes outbox events to NATS JetStream with {@code jnats} (an optional dependency of this
 * module): {@link dev.pgoutbox.relay.nats.NatsPublisher} on the relay's side, {@link
 * dev.pgoutbox.relay.nats.NatsEventIds} on the consumer's side.
 */
@NullMarked
package dev.pgoutbox.relay.nats;

import org.jspecify.annotations.NullMarked;

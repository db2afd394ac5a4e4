/**
 * Publishes outbox events to NATS JetStream with {@code jnats} (an optional dependency of this
 * module): {@link dev.pgoutbox.relay.nats.NatsPublisher} on the relay's side, {@link
 * dev.pgoutbox.core.consumer.NatsEventIds} on the consumer's side (in {@code pgoutbox-core}, so a
 * consumer needs no relay).
 */
@NullMarked
package dev.pgoutbox.relay.nats;

import org.jspecify.annotations.NullMarked;

/**
 * Publishes outbox events to Apache Kafka with {@code kafka-clients} (an optional dependency of
 * this module): {@link dev.pgoutbox.relay.kafka.KafkaPublisher} on the relay's side, {@link
 * dev.pgoutbox.core.consumer.KafkaEventIds} on the consumer's side (in {@code pgoutbox-core}, so a
 * consumer needs no relay).
 */
@NullMarked
package dev.pgoutbox.relay.kafka;

import org.jspecify.annotations.NullMarked;

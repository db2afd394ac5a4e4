package dev.pgoutbox.relay.kafka;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.relay.OutboxMessage;

/**
 * Chooses the topic an event is sent to. The record key is always the aggregate id, so one
 * aggregate's events share a partition and keep their order; routing only picks the topic.
 *
 * <pre>{@code
 * KafkaRouting perTeam = m -> "billing." + m.aggregateType();
 * }</pre>
 *
 * <p>Called on the relay's thread; must not block. An exception it throws fails that event
 * permanently.
 */
@FunctionalInterface
public interface KafkaRouting {

  /** The topic for {@code message}. */
  String topic(OutboxMessage message);

  /**
   * Topic = the aggregate type ({@code order} events to topic {@code order}): the default. An
   * aggregate type that is not a legal topic name (ASCII letters, digits, {@code .}, {@code _},
   * {@code -}, at most 249 characters) is made one: each other character as {@code _XX} per UTF-8
   * byte ({@code Bestellung Ü} to {@code Bestellung_20_C3_9C}), a name still too long cut and ended
   * with {@code _} and 16 hex digits of its SHA-256. So every aggregate type the writer accepts has
   * a topic; names that were legal keep theirs.
   */
  static KafkaRouting byAggregateType() {
    return m -> KafkaTopics.name("", m.aggregateType());
  }

  /**
   * Topic = {@code prefix} followed by the aggregate type, e.g. {@code outbox.order}, made legal as
   * {@link #byAggregateType()} says.
   */
  static KafkaRouting byAggregateType(String prefix) {
    requireNonNull(prefix, "prefix");
    return m -> KafkaTopics.name(prefix, m.aggregateType());
  }

  /** Every event to one topic. */
  static KafkaRouting fixed(String topic) {
    requireNonNull(topic, "topic");
    if (topic.isBlank()) {
      throw new IllegalArgumentException("topic must not be blank");
    }
    return m -> topic;
  }
}

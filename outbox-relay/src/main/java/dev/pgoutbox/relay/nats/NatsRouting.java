package dev.pgoutbox.relay.nats;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.relay.OutboxMessage;

/**
 * Chooses the subject an event is published to; a JetStream stream must capture that subject.
 *
 * <pre>{@code
 * NatsRouting routing = NatsRouting.byTypes("outbox"); // outbox.order.order.created
 * NatsRouting custom = m -> "events." + m.aggregateType() + "." + m.aggregateId();
 * }</pre>
 *
 * <p>Called on the relay's thread; must not block. An exception it throws fails that event
 * permanently.
 */
@FunctionalInterface
public interface NatsRouting {

  /** The subject for {@code message}. */
  String subject(OutboxMessage message);

  /**
   * Subject {@code <prefix>.<aggregate_type>.<event_type>}, the default with prefix {@code outbox}:
   * a stream on {@code outbox.>} captures everything, {@code outbox.order.>} one aggregate type.
   * Characters a subject token cannot hold (whitespace, {@code *}, {@code >}) are replaced by
   * {@code _}; dots inside the types stay and make extra tokens ({@code order.created}).
   */
  static NatsRouting byTypes(String prefix) {
    requireNonNull(prefix, "prefix");
    if (prefix.isBlank() || !clean(prefix).equals(prefix)) {
      throw new IllegalArgumentException(
          "prefix must be a non-blank subject without whitespace or wildcards, was '"
              + prefix
              + "'");
    }
    return m -> prefix + "." + clean(m.aggregateType()) + "." + clean(m.eventType());
  }

  private static String clean(String token) {
    StringBuilder b = new StringBuilder(token.length());
    for (int i = 0; i < token.length(); i++) {
      char c = token.charAt(i);
      b.append(Character.isWhitespace(c) || c == '*' || c == '>' ? '_' : c);
    }
    return b.toString();
  }
}

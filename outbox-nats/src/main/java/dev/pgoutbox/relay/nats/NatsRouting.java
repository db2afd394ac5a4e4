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
 * permanently, and so does a subject NATS cannot publish to (empty, an empty token, {@code *} or
 * {@code >} anywhere, whitespace or a control character): the publisher checks every subject before
 * it is sent. A routing of your own that puts several fields into a subject should keep each to one
 * token, or two events of different fields can share a subject.
 */
@FunctionalInterface
public interface NatsRouting {

  /** The subject for {@code message}. */
  String subject(OutboxMessage message);

  /**
   * Subject {@code <prefix>.<aggregate_type>.<event_type>}, the default with prefix {@code outbox}:
   * a stream on {@code outbox.>} captures everything, {@code outbox.order.>} one aggregate type.
   *
   * <p>The mapping is injective, so one type can never publish into another's subjects. The
   * aggregate type is exactly one token; the event type is one or more, its dots separating tokens
   * ({@code order.created} gives {@code outbox.order.order.created}, as it always did). Characters
   * a token cannot hold are percent-encoded, one {@code %XX} per UTF-8 byte: {@code %} itself
   * ({@code %25}), {@code *} ({@code %2A}), {@code >} ({@code %3E}), whitespace and control
   * characters ({@code %20} for a space), every dot of the aggregate type and a leading, trailing
   * or repeated dot of the event type ({@code %2E}). Aggregate type {@code shop.order} with event
   * type {@code paid} goes to {@code outbox.shop%2Eorder.paid}, apart from aggregate type {@code
   * shop} with event type {@code order.paid}. Percent-decoding the token after the prefix gives the
   * aggregate type, the rest the event type. An empty type (only a row written by hand has one)
   * fails its event permanently.
   *
   * @throws IllegalArgumentException if {@code prefix} is not a literal subject (empty tokens,
   *     wildcards, whitespace)
   */
  static NatsRouting byTypes(String prefix) {
    requireNonNull(prefix, "prefix");
    String problem = NatsSubjects.problem(prefix);
    if (problem != null) {
      throw new IllegalArgumentException(
          "prefix must be a literal NATS subject without wildcards or whitespace, was '"
              + prefix
              + "': "
              + problem);
    }
    return m ->
        prefix
            + "."
            + NatsSubjects.token("aggregateType", m.aggregateType())
            + "."
            + NatsSubjects.tokens("eventType", m.eventType());
  }
}

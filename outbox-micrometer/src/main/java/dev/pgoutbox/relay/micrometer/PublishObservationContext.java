package dev.pgoutbox.relay.micrometer;

import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishTracing;
import io.micrometer.observation.transport.Kind;
import io.micrometer.observation.transport.SenderContext;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The context of one {@code pgoutbox.publish} observation: one event handed to the publisher. A
 * {@link SenderContext} of kind {@link Kind#PRODUCER} whose carrier is the message's outgoing
 * headers, so that a tracing handler (micrometer-tracing's {@code
 * PropagatingSenderTracingObservationHandler}) writes its span's context into what the broker
 * receives. {@link PublishObservationConvention}s read it; the relay fills it.
 *
 * <p>Written on the relay's thread; read by handlers on that thread.
 */
public final class PublishObservationContext extends SenderContext<Map<String, String>> {

  private final OutboxMessage message;
  private final String messagingSystem;
  private final @Nullable String destination;
  private final int batchSize;
  private final @Nullable String linkedTraceparent;
  private final Map<String, Object> publisherAttributes;
  private PublishTracing.@Nullable Outcome outcome;

  PublishObservationContext(
      OutboxMessage message,
      Map<String, String> outgoingHeaders,
      String messagingSystem,
      @Nullable String destination,
      int batchSize,
      @Nullable String linkedTraceparent,
      Map<String, Object> publisherAttributes) {
    super((carrier, key, value) -> carrier.put(key, value), Kind.PRODUCER);
    setCarrier(outgoingHeaders);
    this.message = message;
    this.messagingSystem = messagingSystem;
    this.destination = destination;
    this.batchSize = batchSize;
    this.linkedTraceparent = linkedTraceparent;
    this.publisherAttributes = publisherAttributes;
  }

  /**
   * What the publisher said before sending ({@link
   * dev.pgoutbox.relay.Publisher#traceAttributes(OutboxMessage)}: Kafka key, routing key, {@code
   * server.address}...); empty when it said nothing.
   */
  public Map<String, Object> publisherAttributes() {
    return publisherAttributes;
  }

  /** The event as claimed, with the headers the writer stored. */
  public OutboxMessage message() {
    return message;
  }

  /** The publisher's {@link dev.pgoutbox.relay.Publisher#messagingSystem()}. */
  public String messagingSystem() {
    return messagingSystem;
  }

  /**
   * The publisher's {@link dev.pgoutbox.relay.Publisher#destination(OutboxMessage)}, or null when
   * it does not say.
   */
  public @Nullable String destination() {
    return destination;
  }

  /** How many events the relay's batch holds. */
  public int batchSize() {
    return batchSize;
  }

  /**
   * The stored {@code traceparent} this event's observation is linked to instead of parented by
   * ({@link ObservationTracing.Builder#linkToStoredContext(boolean)}), or null.
   */
  public @Nullable String linkedTraceparent() {
    return linkedTraceparent;
  }

  /** What became of the event; null until the observation is stopped. */
  public PublishTracing.@Nullable Outcome outcome() {
    return outcome;
  }

  void outcome(PublishTracing.Outcome outcome) {
    this.outcome = outcome;
  }
}

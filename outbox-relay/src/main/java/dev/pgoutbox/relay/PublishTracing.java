package dev.pgoutbox.relay;

import static java.util.Objects.requireNonNull;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Traces what the relay publishes: one span (or observation) per event handed to the {@link
 * Publisher}, carried to the consumer in the event's headers. Set with {@link
 * OutboxRelay.Builder#tracing}; {@code dev.pgoutbox.relay.otel.OpenTelemetryTracing} is the
 * OpenTelemetry implementation, {@code dev.pgoutbox.relay.micrometer.ObservationTracing} the
 * Micrometer Observation one. This interface names no tracing library, so the relay loads without
 * one.
 *
 * <p>For each batch the relay calls {@link #start} on its own thread before it calls the publisher,
 * hands the publisher {@link BatchTrace#messages()} instead of the claimed messages, and calls
 * {@link BatchTrace#end} once for every event of the batch when its fate is decided (before the
 * batch's commit). Since every publisher forwards an event's headers to the broker, replacing
 * {@code traceparent} in {@code messages()} is what carries the span's context to the consumer, for
 * built-in and custom publishers alike.
 *
 * <p>Implementations must be thread-safe (several relays may share one) and must not throw: the
 * relay logs what they throw and publishes the batch untraced.
 */
public interface PublishTracing {

  /** No tracing: the publisher gets the messages as claimed. */
  PublishTracing NONE = (batch, publisher) -> BatchTrace.untraced(batch);

  /**
   * Starts the spans of one batch.
   *
   * @param batch the events about to be published, in batch order
   * @param publisher the publisher, for {@link Publisher#messagingSystem()} and {@link
   *     Publisher#destination(OutboxMessage)}
   */
  BatchTrace start(List<OutboxMessage> batch, Publisher publisher);

  /** The spans of one batch. */
  interface BatchTrace {

    /**
     * The messages to publish, in batch order: the claimed ones, each with its span's context in
     * its headers.
     */
    List<OutboxMessage> messages();

    /** Ends the span of event {@code index} of the batch with what became of the event. */
    void end(int index, Outcome outcome);

    /** A trace that changes nothing and ends nothing. */
    static BatchTrace untraced(List<OutboxMessage> batch) {
      List<OutboxMessage> messages = List.copyOf(batch);
      return new BatchTrace() {
        @Override
        public List<OutboxMessage> messages() {
          return messages;
        }

        @Override
        public void end(int index, Outcome outcome) {}
      };
    }
  }

  /** What became of one event handed to the publisher. */
  enum Fate {
    /** The broker acknowledged it; it is marked published. */
    PUBLISHED,
    /** It failed and will be retried after {@link Outcome#retryIn()}. */
    RETRY,
    /** It failed for good (permanent failure, or its last attempt): it is dead-lettered. */
    DEAD_LETTERED,
    /** Not sent: an earlier event of its aggregate failed in the batch; left pending untouched. */
    HELD_BACK,
    /** The batch was rolled back (relay stopping, database error): the event stays pending. */
    ROLLED_BACK
  }

  /**
   * The fate of one event, as the relay records it.
   *
   * @param fate what became of it
   * @param reason the failure as stored in {@code last_error}, or null when published
   * @param permanent whether the publisher answered a permanent failure
   * @param attempt this attempt's number (1 for the first publish)
   * @param retryIn the backoff before the next attempt, zero unless {@link Fate#RETRY}
   * @param traceAttributes what the publisher said about where the broker put the event ({@link
   *     PublishResult.Published#traceAttributes()}), empty unless {@link Fate#PUBLISHED}
   */
  record Outcome(
      Fate fate,
      @Nullable String reason,
      boolean permanent,
      int attempt,
      Duration retryIn,
      Map<String, Object> traceAttributes) {

    /** Checks the components. */
    public Outcome {
      requireNonNull(fate, "fate");
      requireNonNull(retryIn, "retryIn");
      traceAttributes = Map.copyOf(traceAttributes);
    }

    /** An outcome with no trace attributes from the publisher. */
    public Outcome(
        Fate fate, @Nullable String reason, boolean permanent, int attempt, Duration retryIn) {
      this(fate, reason, permanent, attempt, retryIn, Map.of());
    }
  }
}

package dev.pgoutbox.relay.micrometer;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishTracing;
import dev.pgoutbox.relay.Publisher;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The relay's tracing through Micrometer's Observation API, for hosts that trace with
 * micrometer-tracing (Spring Boot's Actuator): one {@code pgoutbox.publish} observation per event
 * handed to the publisher, of kind PRODUCER, whose carrier is the message's outgoing headers, so
 * the host's tracing handler starts the span and writes its context into what the broker receives.
 *
 * <pre>{@code
 * OutboxRelay.builder()
 *     ...
 *     .tracing(ObservationTracing.builder(observationRegistry).tracer(tracer).build())
 *     .build();
 * }</pre>
 *
 * <p><b>The parent.</b> With {@link Builder#tracer} (micrometer-tracing's {@code Tracer}, the one
 * the host's tracing handler uses), the span is the child of the context the writer stored in the
 * event's {@code traceparent}, as with {@code dev.pgoutbox.relay.otel.OpenTelemetryTracing}: one
 * trace from the request to the consumer. Without it the observation has no parent, so a tracing
 * handler starts a new trace per event (a warning says so once); that is right only for registries
 * that time and do not trace. {@link Builder#linkToStoredContext(boolean)} starts a new trace per
 * event on purpose, and records the stored {@code traceparent} as {@code pgoutbox.link.traceparent}
 * (observation handlers cannot add span links).
 *
 * <p><b>Names.</b> {@link DefaultPublishObservationConvention} says what each key is; the span is
 * named {@code send <destination>}. A failed event (retry, dead letter, rolled back) records a
 * {@link PublishFailedException} with the stored reason as the observation's error. Rename with
 * {@link Builder#observationConvention} or a global convention of the registry.
 *
 * <p><b>Cost.</b> A registry without handlers ({@link ObservationRegistry#NOOP}, or one nothing was
 * registered in) is checked once per batch; the batch then goes untraced, with nothing made per
 * event. When no handler wrote a {@code traceparent}, the stored one reaches the consumer as it
 * was.
 *
 * <p>Immutable and thread-safe; relays may share one. Needs {@code
 * io.micrometer:micrometer-observation}; {@link Builder#tracer} needs {@code
 * io.micrometer:micrometer-tracing} (both optional dependencies of this module).
 */
public final class ObservationTracing implements PublishTracing {

  private static final Logger LOG = LoggerFactory.getLogger(ObservationTracing.class);
  private static final String TRACEPARENT = "traceparent";
  private static final String TRACESTATE = "tracestate";

  private final ObservationRegistry registry;
  private final @Nullable StoredParent parent;
  private final boolean link;
  private final @Nullable PublishObservationConvention convention;
  private final AtomicBoolean warnedNewTrace = new AtomicBoolean();

  private ObservationTracing(Builder b) {
    this.registry = b.registry;
    this.parent = b.parent;
    this.link = b.link;
    this.convention = b.convention;
  }

  /**
   * Observations in {@code registry} without a tracer: no stored parent. For registries that only
   * time; with tracing, use {@link #builder} and {@link Builder#tracer}.
   */
  public static ObservationTracing create(ObservationRegistry registry) {
    return builder(registry).build();
  }

  /** A builder of tracing with observations in {@code registry}. */
  public static Builder builder(ObservationRegistry registry) {
    return new Builder(requireNonNull(registry, "registry must not be null"));
  }

  @Override
  public BatchTrace start(List<OutboxMessage> batch, Publisher publisher) {
    if (registry.isNoop()) {
      return BatchTrace.untraced(batch); // Nothing would listen: nothing made per event.
    }
    String system = publisher.messagingSystem();
    Observation[] observations = new Observation[batch.size()];
    PublishObservationContext[] contexts = new PublishObservationContext[batch.size()];
    List<OutboxMessage> traced = new ArrayList<>(batch.size());
    for (int i = 0; i < batch.size(); i++) {
      OutboxMessage m = batch.get(i);
      String stored = m.headers().get(TRACEPARENT);
      PublishObservationContext context =
          new PublishObservationContext(
              m,
              new LinkedHashMap<>(m.headers()),
              system,
              destination(publisher, m),
              batch.size(),
              link ? stored : null,
              traceAttributes(publisher, m));
      if (!link && stored != null && parent != null) {
        parent.apply(context, stored);
      }
      Observation observation =
          Observation.createNotStarted(
                  convention, DefaultPublishObservationConvention.INSTANCE, () -> context, registry)
              // The stored context or none: never whatever the relay's thread has current.
              .parentObservation(null);
      if (observation.isNoop()) {
        traced.add(m); // A predicate of the registry declined it.
        continue;
      }
      observation.start();
      observations[i] = observation;
      contexts[i] = context;
      traced.add(outgoing(m, context));
    }
    return new Observations(observations, contexts, List.copyOf(traced));
  }

  @Override
  public String toString() {
    return "ObservationTracing["
        + (link ? "linked to" : parent == null ? "no tracer, not parented to" : "parented to")
        + " the stored context]";
  }

  /**
   * {@code m} with what the handlers wrote into the carrier. A {@code tracestate} stored with the
   * event stays only while the {@code traceparent} stays in its trace (the state belongs to it).
   */
  private OutboxMessage outgoing(OutboxMessage m, PublishObservationContext context) {
    Map<String, String> headers = requireNonNull(context.getCarrier());
    if (headers.equals(m.headers())) {
      return m; // No handler wrote anything: the stored context goes as it was.
    }
    String stored = m.headers().get(TRACEPARENT);
    String written = headers.get(TRACEPARENT);
    if (!Objects.equals(stored, written)) {
      String storedTrace = Traceparent.traceIdOf(stored);
      String writtenTrace = Traceparent.traceIdOf(written);
      if (!Objects.equals(storedTrace, writtenTrace)) {
        if (Objects.equals(headers.get(TRACESTATE), m.headers().get(TRACESTATE))) {
          headers.remove(TRACESTATE);
        }
        if (!link && storedTrace != null && warnedNewTrace.compareAndSet(false, true)) {
          LOG.warn(
              "pgoutbox - A tracing handler started a new trace for event {} instead of continuing"
                  + " the stored one: give ObservationTracing the handler's Tracer"
                  + " (ObservationTracing.builder(registry).tracer(tracer)). Said once.",
              m.id());
        }
      }
    }
    return new OutboxMessage(
        m.id(),
        m.position(),
        m.aggregateType(),
        m.aggregateId(),
        m.eventType(),
        m.payload(),
        headers,
        m.attempt(),
        m.createdAt());
  }

  private static Map<String, Object> traceAttributes(Publisher publisher, OutboxMessage m) {
    try {
      Map<String, Object> attributes = publisher.traceAttributes(m);
      return attributes == null ? Map.of() : attributes;
    } catch (RuntimeException e) {
      return Map.of();
    }
  }

  private static @Nullable String destination(Publisher publisher, OutboxMessage m) {
    try {
      return publisher.destination(m);
    } catch (RuntimeException e) {
      return null;
    }
  }

  /** The observations of one batch; stopped on the relay's thread. */
  private static final class Observations implements BatchTrace {
    private final @Nullable Observation[] observations;
    private final @Nullable PublishObservationContext[] contexts;
    private final List<OutboxMessage> messages;

    Observations(
        @Nullable Observation[] observations,
        @Nullable PublishObservationContext[] contexts,
        List<OutboxMessage> messages) {
      this.observations = observations;
      this.contexts = contexts;
      this.messages = messages;
    }

    @Override
    public List<OutboxMessage> messages() {
      return messages;
    }

    @Override
    public void end(int index, Outcome outcome) {
      Observation observation = observations[index];
      PublishObservationContext context = contexts[index];
      if (observation == null || context == null) {
        return;
      }
      observations[index] = null;
      contexts[index] = null;
      context.outcome(outcome);
      switch (outcome.fate()) {
        case PUBLISHED, HELD_BACK -> {}
        case RETRY, DEAD_LETTERED, ROLLED_BACK ->
            observation.error(new PublishFailedException(outcome));
      }
      observation.stop();
    }
  }

  /** Settings of an {@link ObservationTracing}. Not thread-safe. */
  public static final class Builder {
    private final ObservationRegistry registry;
    private @Nullable StoredParent parent;
    private boolean link;
    private @Nullable PublishObservationConvention convention;

    private Builder(ObservationRegistry registry) {
      this.registry = registry;
    }

    /**
     * The tracer of the host's tracing handler ({@code io.micrometer.tracing.Tracer}; Spring Boot
     * has it as a bean): each event's span becomes the child of the context the writer stored, so
     * the request, the relay's span and the consumer are one trace. Needs micrometer-tracing.
     */
    public Builder tracer(io.micrometer.tracing.Tracer tracer) {
      this.parent = new TracerStoredParent(requireNonNull(tracer, "tracer must not be null"));
      return this;
    }

    /**
     * Whether each event's span starts a trace of its own instead of being the child of the stored
     * context, which it then names in the key {@code pgoutbox.link.traceparent} (observation
     * handlers cannot add span links). Default {@code false}.
     */
    public Builder linkToStoredContext(boolean link) {
      this.link = link;
      return this;
    }

    /**
     * A convention that names the observations and their key values instead of {@link
     * DefaultPublishObservationConvention} (a global convention of the registry otherwise wins over
     * the default).
     */
    public Builder observationConvention(PublishObservationConvention convention) {
      this.convention = requireNonNull(convention, "convention must not be null");
      return this;
    }

    /** The tracing. */
    public ObservationTracing build() {
      return new ObservationTracing(this);
    }
  }
}

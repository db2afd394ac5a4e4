package dev.pgoutbox.relay.otel;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.PublishTracing;
import dev.pgoutbox.relay.Publisher;
import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanBuilder;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.context.propagation.TextMapSetter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The relay's OpenTelemetry tracing: one PRODUCER span per event handed to the publisher, following
 * the OpenTelemetry messaging semantic conventions, with the span's own W3C context put into the
 * message's headers so that the consumer continues the trace.
 *
 * <pre>{@code
 * OutboxRelay.builder()
 *     ...
 *     .tracing(OpenTelemetryTracing.create(openTelemetry))
 *     .build();
 * }</pre>
 *
 * <p><b>The span.</b> Named {@code send <destination>}, kind {@code PRODUCER}, child of the context
 * the writer stored in the event's {@code traceparent} (a new trace when there is none; with {@link
 * Builder#linkToStoredContext(boolean)}, a new trace per event with a link to it instead). It
 * starts when the relay hands the batch to the publisher and ends when the event's fate is decided.
 * Attributes: {@code messaging.system} ({@link Publisher#messagingSystem()}), {@code
 * messaging.destination.name} ({@link Publisher#destination(OutboxMessage)}), {@code
 * messaging.operation.type} and {@code messaging.operation.name} {@code send}, {@code
 * messaging.message.id} (the event id), what the publisher adds ({@link Publisher#traceAttributes}:
 * the Kafka key, RabbitMQ routing key, {@code server.address} and {@code server.port}; and once the
 * broker answered, {@link PublishResult#published(Map)}: the Kafka partition and offset), and
 * pgoutbox's own: {@code pgoutbox.batch.size}, {@code pgoutbox.event.type}, {@code
 * pgoutbox.aggregate.type}, {@code pgoutbox.aggregate.id}, {@code pgoutbox.attempt} and {@code
 * pgoutbox.outcome} ({@code published}, {@code retry}, {@code dead_lettered}, {@code held_back},
 * {@code rolled_back}). A failure sets the status to {@code ERROR} with the reason stored in {@code
 * last_error}, {@code error.type} ({@code retryable}, {@code permanent}, {@code rolled_back}), and
 * for a retry {@code pgoutbox.retry_in_ms}; each retry is a span of its own, in the same trace,
 * with the next {@code pgoutbox.attempt}. (The conventions keep {@code
 * messaging.batch.message_count} for spans that cover several messages, hence {@code
 * pgoutbox.batch.size}.)
 *
 * <p>Immutable and thread-safe; relays may share one.
 */
public final class OpenTelemetryTracing implements PublishTracing {

  /** The instrumentation scope of the spans: {@value}. */
  public static final String INSTRUMENTATION_NAME = "dev.pgoutbox.relay";

  static final AttributeKey<String> MESSAGING_SYSTEM = AttributeKey.stringKey("messaging.system");
  static final AttributeKey<String> DESTINATION =
      AttributeKey.stringKey("messaging.destination.name");
  static final AttributeKey<String> OPERATION_TYPE =
      AttributeKey.stringKey("messaging.operation.type");
  static final AttributeKey<String> OPERATION_NAME =
      AttributeKey.stringKey("messaging.operation.name");
  static final AttributeKey<String> MESSAGE_ID = AttributeKey.stringKey("messaging.message.id");
  static final AttributeKey<String> ERROR_TYPE = AttributeKey.stringKey("error.type");
  static final AttributeKey<Long> BATCH_SIZE = AttributeKey.longKey("pgoutbox.batch.size");
  static final AttributeKey<String> EVENT_TYPE = AttributeKey.stringKey("pgoutbox.event.type");
  static final AttributeKey<String> AGGREGATE_TYPE =
      AttributeKey.stringKey("pgoutbox.aggregate.type");
  static final AttributeKey<String> AGGREGATE_ID = AttributeKey.stringKey("pgoutbox.aggregate.id");
  static final AttributeKey<Long> ATTEMPT = AttributeKey.longKey("pgoutbox.attempt");
  static final AttributeKey<String> OUTCOME = AttributeKey.stringKey("pgoutbox.outcome");
  static final AttributeKey<Long> RETRY_IN_MS = AttributeKey.longKey("pgoutbox.retry_in_ms");

  private static final String TRACEPARENT = "traceparent";
  private static final String TRACESTATE = "tracestate";

  private static final TextMapGetter<Map<String, String>> GETTER =
      new TextMapGetter<>() {
        @Override
        public @Nullable String get(@Nullable Map<String, String> carrier, String key) {
          return carrier == null ? null : carrier.get(key);
        }
      };

  private static final TextMapSetter<Map<String, String>> SETTER =
      (carrier, key, value) -> {
        if (carrier != null) {
          carrier.put(key, value);
        }
      };

  private final Tracer tracer;
  private final boolean link;

  private OpenTelemetryTracing(Builder b) {
    this.tracer = b.openTelemetry.getTracer(INSTRUMENTATION_NAME);
    this.link = b.link;
  }

  /** Tracing with {@code openTelemetry}'s tracer, spans parented to the stored context. */
  public static OpenTelemetryTracing create(OpenTelemetry openTelemetry) {
    return builder(openTelemetry).build();
  }

  /**
   * Tracing with {@link GlobalOpenTelemetry} (the Java agent's, or the one the host registered).
   * The relay uses it by default when the global instance is set when the relay is built.
   */
  public static OpenTelemetryTracing global() {
    return create(GlobalOpenTelemetry.get());
  }

  /**
   * {@link #global()} when a global instance was set (the Java agent sets it, or the host), else
   * null; never sets one itself. Also null with an OpenTelemetry API too old to tell whether one
   * was set (before 1.57's {@code GlobalOpenTelemetry.isSet()}, e.g. the 1.55 that Spring Boot 4.0
   * manages): asking for the instance there would fix a no-op one as the global instance.
   */
  public static @Nullable OpenTelemetryTracing globalIfSet() {
    try {
      return GlobalOpenTelemetry.isSet() ? global() : null;
    } catch (NoSuchMethodError e) {
      return null;
    }
  }

  /** A builder of tracing with {@code openTelemetry}'s tracer. */
  public static Builder builder(OpenTelemetry openTelemetry) {
    return new Builder(requireNonNull(openTelemetry, "openTelemetry"));
  }

  @Override
  public BatchTrace start(List<OutboxMessage> batch, Publisher publisher) {
    String system = publisher.messagingSystem();
    Span[] spans = new Span[batch.size()];
    List<OutboxMessage> traced = new ArrayList<>(batch.size());
    for (int i = 0; i < batch.size(); i++) {
      OutboxMessage m = batch.get(i);
      Span span =
          startSpan(
              m, system, destination(publisher, m), traceAttributes(publisher, m), batch.size());
      spans[i] = span;
      traced.add(withContextOf(span, m));
    }
    return new Spans(spans, List.copyOf(traced));
  }

  @Override
  public String toString() {
    return "OpenTelemetryTracing[" + (link ? "linked" : "parented") + " to the stored context]";
  }

  private Span startSpan(
      OutboxMessage m,
      String system,
      @Nullable String destination,
      Map<String, Object> publisherAttributes,
      int batchSize) {
    Context stored =
        m.headers().isEmpty()
            ? Context.root()
            : W3CTraceContextPropagator.getInstance().extract(Context.root(), m.headers(), GETTER);
    SpanBuilder span =
        tracer
            .spanBuilder(destination == null ? "send" : "send " + destination)
            .setSpanKind(SpanKind.PRODUCER)
            .setAttribute(MESSAGING_SYSTEM, system)
            .setAttribute(OPERATION_TYPE, "send")
            .setAttribute(OPERATION_NAME, "send")
            .setAttribute(MESSAGE_ID, m.id().toString())
            .setAttribute(BATCH_SIZE, (long) batchSize)
            .setAttribute(EVENT_TYPE, m.eventType())
            .setAttribute(AGGREGATE_TYPE, m.aggregateType())
            .setAttribute(AGGREGATE_ID, m.aggregateId())
            .setAttribute(ATTEMPT, (long) m.attempt());
    if (destination != null) {
      span.setAttribute(DESTINATION, destination);
    }
    publisherAttributes.forEach((name, value) -> setAttribute(span, name, value));
    SpanContext storedSpan = Span.fromContext(stored).getSpanContext();
    if (link && storedSpan.isValid()) {
      span.setNoParent().addLink(storedSpan);
    } else {
      // Context.root() when nothing was stored: a new trace, never the relay thread's context.
      span.setParent(stored);
    }
    return span.startSpan();
  }

  private static Map<String, Object> traceAttributes(Publisher publisher, OutboxMessage m) {
    try {
      Map<String, Object> attributes = publisher.traceAttributes(m);
      return attributes == null ? Map.of() : attributes;
    } catch (RuntimeException e) {
      return Map.of();
    }
  }

  /** Sets a String, Long or Boolean attribute; anything else as its text. */
  private static void setAttribute(SpanBuilder span, String name, @Nullable Object value) {
    if (value instanceof Long l) {
      span.setAttribute(name, l);
    } else if (value instanceof Integer i) {
      span.setAttribute(name, i.longValue());
    } else if (value instanceof Boolean b) {
      span.setAttribute(name, b);
    } else if (value != null) {
      span.setAttribute(name, value.toString());
    }
  }

  /** Sets a String, Long or Boolean attribute; anything else as its text. */
  private static void setAttribute(Span span, String name, @Nullable Object value) {
    if (value instanceof Long l) {
      span.setAttribute(name, l);
    } else if (value instanceof Integer i) {
      span.setAttribute(name, i.longValue());
    } else if (value instanceof Boolean b) {
      span.setAttribute(name, b);
    } else if (value != null) {
      span.setAttribute(name, value.toString());
    }
  }

  private static @Nullable String destination(Publisher publisher, OutboxMessage m) {
    try {
      return publisher.destination(m);
    } catch (RuntimeException e) {
      return null;
    }
  }

  /** {@code m} with the span's traceparent/tracestate in place of the stored ones. */
  private static OutboxMessage withContextOf(Span span, OutboxMessage m) {
    if (!span.getSpanContext().isValid()) {
      return m; // A no-op tracer without a stored parent: nothing to carry.
    }
    Map<String, String> headers = new LinkedHashMap<>(m.headers());
    headers.remove(TRACEPARENT);
    headers.remove(TRACESTATE);
    W3CTraceContextPropagator.getInstance().inject(Context.root().with(span), headers, SETTER);
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

  /** The spans of one batch; ended on the relay's thread. */
  private static final class Spans implements BatchTrace {
    private final @Nullable Span[] spans;
    private final List<OutboxMessage> messages;

    Spans(Span[] spans, List<OutboxMessage> messages) {
      this.spans = spans;
      this.messages = messages;
    }

    @Override
    public List<OutboxMessage> messages() {
      return messages;
    }

    @Override
    public void end(int index, Outcome outcome) {
      Span span = spans[index];
      if (span == null) {
        return;
      }
      spans[index] = null;
      span.setAttribute(OUTCOME, outcome.fate().name().toLowerCase(Locale.ROOT));
      outcome.traceAttributes().forEach((name, value) -> setAttribute(span, name, value));
      String reason = outcome.reason() == null ? "" : outcome.reason();
      switch (outcome.fate()) {
        case PUBLISHED, HELD_BACK -> {}
        case RETRY -> {
          span.setStatus(StatusCode.ERROR, reason);
          span.setAttribute(ERROR_TYPE, outcome.permanent() ? "permanent" : "retryable");
          span.setAttribute(RETRY_IN_MS, outcome.retryIn().toMillis());
        }
        case DEAD_LETTERED -> {
          span.setStatus(StatusCode.ERROR, reason);
          span.setAttribute(ERROR_TYPE, outcome.permanent() ? "permanent" : "retryable");
        }
        case ROLLED_BACK -> {
          span.setStatus(StatusCode.ERROR, reason);
          span.setAttribute(ERROR_TYPE, "rolled_back");
        }
      }
      span.end();
    }
  }

  /** Settings of an {@link OpenTelemetryTracing}. Not thread-safe. */
  public static final class Builder {
    private final OpenTelemetry openTelemetry;
    private boolean link;

    private Builder(OpenTelemetry openTelemetry) {
      this.openTelemetry = openTelemetry;
    }

    /**
     * Whether each event's span starts a trace of its own with a link to the stored context,
     * instead of being its child. Default {@code false} (child: one trace from the request to the
     * consumer). Links suit backends that sample or bill per trace and requests that write many
     * events.
     */
    public Builder linkToStoredContext(boolean link) {
      this.link = link;
      return this;
    }

    /** The tracing. */
    public OpenTelemetryTracing build() {
      return new OpenTelemetryTracing(this);
    }
  }
}

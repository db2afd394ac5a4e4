package dev.pgoutbox.relay.micrometer;

import dev.pgoutbox.relay.PublishTracing;
import io.micrometer.common.KeyValue;
import io.micrometer.common.KeyValues;
import java.util.Locale;
import java.util.Map;

/**
 * The relay's publish observation as pgoutbox names it, with the keys of the OpenTelemetry
 * implementation ({@code dev.pgoutbox.relay.otel.OpenTelemetryTracing}), so that a trace looks the
 * same whichever bridge made it.
 *
 * <ul>
 *   <li>name {@value #NAME}; contextual name (the span's) {@code send <destination>};
 *   <li>low cardinality (metric tags): {@code messaging.system}, {@code messaging.destination.name}
 *       ({@code unknown} when the publisher does not say), {@code messaging.operation.type} and
 *       {@code messaging.operation.name} ({@code send}), and once the event's fate is known {@code
 *       pgoutbox.outcome} ({@code published}, {@code retry}, {@code dead_lettered}, {@code
 *       held_back}, {@code rolled_back}) and {@code error.type} ({@code retryable}, {@code
 *       permanent}, {@code rolled_back}, or {@code none});
 *   <li>high cardinality (span tags only): {@code messaging.message.id} (the event id), {@code
 *       pgoutbox.attempt}, {@code pgoutbox.batch.size}, {@code pgoutbox.event.type}, {@code
 *       pgoutbox.aggregate.type}, {@code pgoutbox.aggregate.id}, for a retry {@code
 *       pgoutbox.retry_in_ms}, when linked {@code pgoutbox.link.traceparent}, and what the
 *       publisher says ({@code Publisher.traceAttributes}: Kafka key, routing key, {@code
 *       server.address}, {@code server.port}; once published, the Kafka partition and offset), as
 *       text.
 * </ul>
 *
 * <p>Extend it to rename or add keys. Stateless and thread-safe.
 */
public class DefaultPublishObservationConvention implements PublishObservationConvention {

  /** The observation's name: {@value}. */
  public static final String NAME = "pgoutbox.publish";

  /** The convention as pgoutbox names it. */
  public static final DefaultPublishObservationConvention INSTANCE =
      new DefaultPublishObservationConvention();

  /** A convention as pgoutbox names it; extend to change it. */
  public DefaultPublishObservationConvention() {}

  @Override
  public String getName() {
    return NAME;
  }

  @Override
  public String getContextualName(PublishObservationContext context) {
    String destination = context.destination();
    return destination == null ? "send" : "send " + destination;
  }

  @Override
  public KeyValues getLowCardinalityKeyValues(PublishObservationContext context) {
    String destination = context.destination();
    KeyValues keys =
        KeyValues.of(
            KeyValue.of("messaging.system", context.messagingSystem()),
            KeyValue.of(
                "messaging.destination.name", destination == null ? "unknown" : destination),
            KeyValue.of("messaging.operation.type", "send"),
            KeyValue.of("messaging.operation.name", "send"));
    PublishTracing.Outcome outcome = context.outcome();
    if (outcome == null) {
      return keys; // At start: the fate is not known yet.
    }
    return keys.and(
        KeyValue.of("pgoutbox.outcome", outcome.fate().name().toLowerCase(Locale.ROOT)),
        KeyValue.of("error.type", errorType(outcome)));
  }

  @Override
  public KeyValues getHighCardinalityKeyValues(PublishObservationContext context) {
    var m = context.message();
    KeyValues keys =
        KeyValues.of(
            KeyValue.of("messaging.message.id", m.id().toString()),
            KeyValue.of("pgoutbox.attempt", Integer.toString(m.attempt())),
            KeyValue.of("pgoutbox.batch.size", Integer.toString(context.batchSize())),
            KeyValue.of("pgoutbox.event.type", m.eventType()),
            KeyValue.of("pgoutbox.aggregate.type", m.aggregateType()),
            KeyValue.of("pgoutbox.aggregate.id", m.aggregateId()));
    String linked = context.linkedTraceparent();
    if (linked != null) {
      keys = keys.and("pgoutbox.link.traceparent", linked);
    }
    for (Map.Entry<String, Object> a : context.publisherAttributes().entrySet()) {
      keys = keys.and(a.getKey(), String.valueOf(a.getValue()));
    }
    PublishTracing.Outcome outcome = context.outcome();
    if (outcome != null) {
      for (Map.Entry<String, Object> a : outcome.traceAttributes().entrySet()) {
        keys = keys.and(a.getKey(), String.valueOf(a.getValue()));
      }
    }
    if (outcome != null && outcome.fate() == PublishTracing.Fate.RETRY) {
      keys = keys.and("pgoutbox.retry_in_ms", Long.toString(outcome.retryIn().toMillis()));
    }
    return keys;
  }

  /**
   * {@code error.type} of {@code outcome}: {@code retryable}, {@code permanent}, {@code
   * rolled_back}, or {@code none} when the event was published or held back. (A metric tag must be
   * present on every measurement, hence {@code none}; the OpenTelemetry span leaves it out.)
   */
  protected String errorType(PublishTracing.Outcome outcome) {
    return switch (outcome.fate()) {
      case PUBLISHED, HELD_BACK -> "none";
      case RETRY, DEAD_LETTERED -> outcome.permanent() ? "permanent" : "retryable";
      case ROLLED_BACK -> "rolled_back";
    };
  }
}

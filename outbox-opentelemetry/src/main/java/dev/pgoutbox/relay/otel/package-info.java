/**
 * OpenTelemetry tracing of the relay: {@link dev.pgoutbox.relay.otel.OpenTelemetryTracing}, one
 * PRODUCER span per published event, parented to the trace context the writer stored. Needs {@code
 * io.opentelemetry:opentelemetry-api} (an optional dependency of this module).
 */
@NullMarked
package dev.pgoutbox.relay.otel;

import org.jspecify.annotations.NullMarked;

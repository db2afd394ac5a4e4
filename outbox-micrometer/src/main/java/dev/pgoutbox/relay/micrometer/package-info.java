/**
 * Micrometer for the relay: its metrics ({@link
 * dev.pgoutbox.relay.micrometer.MicrometerRelayMetrics}, needs {@code micrometer-core}) and its
 * tracing through the Observation API ({@link dev.pgoutbox.relay.micrometer.ObservationTracing},
 * needs {@code micrometer-observation}, and {@code micrometer-tracing} to parent spans to the
 * stored context). All optional dependencies.
 */
@NullMarked
package dev.pgoutbox.relay.micrometer;

import org.jspecify.annotations.NullMarked;

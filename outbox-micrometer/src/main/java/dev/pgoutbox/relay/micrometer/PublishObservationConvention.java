package dev.pgoutbox.relay.micrometer;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationConvention;

/**
 * Names the relay's publish observations and their key values. Implement it (or extend {@link
 * DefaultPublishObservationConvention}) to rename them, and give it to {@link
 * ObservationTracing.Builder#observationConvention} or register it as a global convention of the
 * {@code ObservationRegistry}.
 */
public interface PublishObservationConvention
    extends ObservationConvention<PublishObservationContext> {

  @Override
  default boolean supportsContext(Observation.Context context) {
    return context instanceof PublishObservationContext;
  }
}

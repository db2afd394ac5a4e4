package dev.pgoutbox.relay.micrometer;

/**
 * Makes the context the writer stored the parent of an observation's span. Names no tracing type,
 * so {@link ObservationTracing} loads without micrometer-tracing; {@link TracerStoredParent} is the
 * one implementation.
 */
interface StoredParent {

  /**
   * Makes the span {@code traceparent} names the parent of the span that a tracing handler will
   * start for {@code context}; does nothing when it is not a valid W3C {@code traceparent}.
   */
  void apply(PublishObservationContext context, String traceparent);
}

package dev.pgoutbox.relay;

/** What a dead event (attempts exhausted, or a permanent failure) does to its aggregate. */
public enum DeadLetterPolicy {
  /**
   * The dead event blocks the later events of its aggregate until it is retried or discarded
   * through {@link OutboxAdmin}. Order is never broken. The default.
   */
  HOLD_AGGREGATE,
  /**
   * The dead event is set aside and the aggregate's later events flow on. Consumers see a gap in
   * that aggregate's sequence.
   */
  RELEASE_AGGREGATE
}

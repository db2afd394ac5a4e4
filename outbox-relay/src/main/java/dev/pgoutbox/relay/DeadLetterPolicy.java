package dev.pgoutbox.relay;

/** What a dead event (attempts exhausted, or a permanent failure) does to its aggregate. */
public enum DeadLetterPolicy {
  /**
   * The dead event blocks the later events of its aggregate until it is retried or discarded
   * through {@code OutboxAdmin} (pgoutbox-admin). Order is never broken. The default.
   */
  HOLD_AGGREGATE,
  /**
   * The dead event is set aside and the aggregate's later events flow on. Consumers see a gap in
   * that aggregate's sequence; should the event be retried through {@code OutboxAdmin.retry}, it is
   * published after the events that went on without it.
   */
  RELEASE_AGGREGATE
}

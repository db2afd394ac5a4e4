package dev.pgoutbox.relay;

/** How strictly the relay keeps the order of each aggregate's events. */
public enum Ordering {
  /**
   * Event N+1 of an aggregate is never published before event N, with any number of relays. One
   * relay at a time holds an aggregate; a failing event holds back the later events of its own
   * aggregate, and only those. The default.
   */
  STRICT,
  /**
   * Events are claimed oldest first but independently: a failing event does not hold back the rest
   * of its aggregate, and several relays may publish one aggregate's events concurrently. For
   * consumers that do not care about order, at a higher throughput.
   */
  UNORDERED
}

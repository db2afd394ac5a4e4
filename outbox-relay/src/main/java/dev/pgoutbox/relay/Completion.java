package dev.pgoutbox.relay;

/** What the relay does to a published event's row. */
public enum Completion {
  /**
   * Sets {@code processed_at}; the row stays as an audit trail until retention purges it ({@code
   * OutboxAdmin.purgeProcessed} of pgoutbox-admin). The default.
   */
  MARK_PROCESSED,
  /** Deletes the row at once: no history, the least work for the table and for vacuum. */
  DELETE
}

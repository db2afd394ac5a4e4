package dev.pgoutbox.core;

/**
 * How {@link Outbox} writes an event: a row of {@code outbox_events} (the default), or a
 * transactional logical decoding message that only the WAL relay reads.
 *
 * <pre>{@code
 * Outbox outbox = Outbox.builder().schema("outbox").transport(OutboxTransport.MESSAGES).build();
 * WalRelay relay = WalRelay.builder().schema("outbox").transport(OutboxTransport.MESSAGES)...build();
 * }</pre>
 *
 * <p>See docs/wal-messages.md for what {@link #MESSAGES} needs (the WAL relay, PostgreSQL 14 or
 * later, {@code EXECUTE} on {@code pg_logical_emit_message} taken from {@code PUBLIC}) and what it
 * gives up (no row per delivered event; slot loss loses what the slot had not confirmed).
 */
public enum OutboxTransport {
  /**
   * One {@code INSERT} into {@code <schema>.outbox_events} per call: every relay reads it, the
   * table keeps the history of delivered events until retention purges it.
   */
  ROWS,

  /**
   * One {@code pg_catalog.pg_logical_emit_message(true, 'pgoutbox:<schema>', <event>)} per event,
   * in the caller's transaction: nothing is written to a table; the event is in the WAL only, and
   * only a {@code WalRelay} configured with this transport publishes it. An event whose publish
   * fails is parked into the table (as a row) by the relay.
   */
  MESSAGES;

  /**
   * The prefix of the logical decoding messages of the outbox in {@code schema}: {@code
   * pgoutbox:<schema>}. The WAL relay publishes transactional messages with exactly this prefix.
   */
  public static String messagePrefix(String schema) {
    return "pgoutbox:" + schema;
  }
}

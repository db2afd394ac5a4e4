package dev.pgoutbox.relay.wal;

import dev.pgoutbox.core.OutboxTransport;
import dev.pgoutbox.core.internal.EventMessages;
import dev.pgoutbox.relay.internal.ClaimedRow;
import dev.pgoutbox.relay.internal.RelayLog;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The message transport on the reader's side: turns the transactional logical decoding messages of
 * this outbox ({@code pgoutbox:<schema>}) into the rows the reader publishes, and parks a failed
 * event by inserting the row it never had. Not thread-safe: one per reader.
 *
 * <p>An event read from a message has no row, so no position: it gets a negative one, unique within
 * this reader, which the reader uses as its key in a batch; the completer skips it (a delivered
 * message writes nothing), and parking inserts its row instead of flagging one ({@link #park}).
 */
final class WalMessages {

  private final String prefix;
  private final String parkSql;
  private final String reparkSql;
  private final RelayLog log;
  private long nextPosition = -1;

  WalMessages(String schema, RelayLog log) {
    this.prefix = OutboxTransport.messagePrefix(schema);
    this.parkSql = parkSql(schema);
    this.reparkSql =
        "UPDATE "
            + schema
            + ".outbox_events e SET parked = true, commit_lsn = coalesce(e.commit_lsn, k.l)"
            + " FROM unnest(?::pg_catalog.int8[], ?::pg_catalog.int8[]) AS k(p, l)"
            + " WHERE e.position = k.p AND e.processed_at IS NULL";
    this.log = log;
  }

  /**
   * The reader's statement that flags rows parked, keeping a commit LSN a row has already: the
   * reader reads the insert of each row it parked from a message, and that row's place is its
   * message's transaction, not the parking one.
   */
  String reparkSql() {
    return reparkSql;
  }

  /** Whether {@code row} came from a message (it has no row in the table unless parked). */
  static boolean fromMessage(ClaimedRow row) {
    return row.position() < 0;
  }

  /**
   * The event a message carries, or null when the message is not this outbox's (another prefix),
   * not transactional, or does not decode (logged at ERROR with its LSN: no writer of pgoutbox
   * emits it, and stopping on it would stop every event behind it for good).
   */
  @Nullable ClaimedRow row(PgOutputDecoder.LogicalMessage message) {
    if (!message.prefix().equals(prefix)) {
      return null;
    }
    if (!message.transactional()) {
      log.error(
          "Ignored a non-transactional message with prefix {} at LSN {}: pgoutbox writes"
              + " transactional messages only, so a role with EXECUTE on"
              + " pg_logical_emit_message emitted it (see docs/wal-messages.md, grants)",
          prefix,
          lsn(message.lsn()));
      return null;
    }
    EventMessages.Decoded event;
    try {
      event = EventMessages.decode(message.content());
    } catch (IllegalArgumentException e) {
      log.error(
          "Ignored a message with prefix {} at LSN {} that is not a pgoutbox event: {}",
          prefix,
          lsn(message.lsn()),
          e.getMessage());
      return null;
    }
    return new ClaimedRow(
        event.id(),
        nextPosition--,
        event.aggregateType(),
        event.aggregateId(),
        event.eventType(),
        event.payload(),
        event.headers(),
        0,
        event.createdAt(),
        true);
  }

  /** The rows of {@code rowsRead} that came from messages and are among {@code parkedPositions}. */
  static List<ClaimedRow> parked(List<ClaimedRow> rowsRead, List<Long> parkedPositions) {
    Set<Long> parked = new HashSet<>();
    for (long position : parkedPositions) {
      if (position < 0) {
        parked.add(position);
      }
    }
    List<ClaimedRow> rows = new ArrayList<>(parked.size());
    if (parked.isEmpty()) {
      return rows;
    }
    for (ClaimedRow row : rowsRead) {
      if (parked.contains(row.position())) {
        rows.add(row);
      }
    }
    return rows;
  }

  /**
   * Inserts {@code rows} (from messages) as parked rows with the commit LSN of their transaction,
   * in the parking transaction {@code c}, before their failures are recorded on them by id. A row
   * of that id already there (the message read again after a restart, its row parked by the last
   * reader) is left as it is.
   */
  void park(Connection c, List<ClaimedRow> rows, Map<Long, Long> commitLsns) throws SQLException {
    if (rows.isEmpty()) {
      return;
    }
    int n = rows.size();
    String[] ids = new String[n];
    String[] types = new String[n];
    String[] aggregates = new String[n];
    String[] eventTypes = new String[n];
    String[] payloads = new String[n];
    String[] headers = new String[n];
    String[] createdAt = new String[n];
    Long[] lsns = new Long[n];
    for (int i = 0; i < n; i++) {
      ClaimedRow row = rows.get(i);
      ids[i] = row.id().toString();
      types[i] = row.aggregateType();
      aggregates[i] = row.aggregateId();
      eventTypes[i] = row.eventType();
      payloads[i] = row.payload();
      headers[i] = row.headers();
      createdAt[i] = row.createdAt().toString();
      lsns[i] = commitLsns.get(row.position());
    }
    try (PreparedStatement ps = c.prepareStatement(parkSql)) {
      ps.setArray(1, c.createArrayOf("text", ids));
      ps.setArray(2, c.createArrayOf("text", types));
      ps.setArray(3, c.createArrayOf("text", aggregates));
      ps.setArray(4, c.createArrayOf("text", eventTypes));
      ps.setArray(5, c.createArrayOf("text", payloads));
      ps.setArray(6, c.createArrayOf("text", headers));
      ps.setArray(7, c.createArrayOf("text", createdAt));
      ps.setArray(8, c.createArrayOf("int8", lsns));
      int inserted = ps.executeUpdate();
      if (inserted < n) {
        log.info(
            "{} of {} parked message event(s) already had their row (read again after a restart)",
            n - inserted,
            n);
      }
    }
  }

  /**
   * The parking insert: binds 1-8 are arrays of ids, aggregate types, aggregate ids, event types,
   * payloads, headers, created_at (ISO text) and commit LSNs. It needs {@code INSERT} on those
   * columns and {@code parked}, {@code commit_lsn} (roles/wal-messages-grants.sql). The multi-array
   * {@code unnest} is FROM-clause syntax that a schema-qualified name does not reach; the reader's
   * sessions run under the fixed {@code search_path}.
   */
  static String parkSql(String schema) {
    return "INSERT INTO "
        + schema
        + ".outbox_events (id, aggregate_type, aggregate_id, event_type, payload, headers,"
        + " created_at, parked, commit_lsn)"
        + " SELECT cast(k.i as pg_catalog.uuid), k.t, k.a, k.e, cast(k.p as pg_catalog.jsonb),"
        + " cast(k.h as pg_catalog.jsonb), cast(k.c as pg_catalog.timestamptz), true, k.l"
        + " FROM unnest(cast(? as pg_catalog.text[]), cast(? as pg_catalog.text[]),"
        + " cast(? as pg_catalog.text[]), cast(? as pg_catalog.text[]),"
        + " cast(? as pg_catalog.text[]), cast(? as pg_catalog.text[]),"
        + " cast(? as pg_catalog.text[]), cast(? as pg_catalog.int8[]))"
        + " AS k(i, t, a, e, p, h, c, l)"
        + " ON CONFLICT (id) DO NOTHING";
  }

  private static String lsn(long lsn) {
    return org.postgresql.replication.LogSequenceNumber.valueOf(lsn).asString();
  }
}

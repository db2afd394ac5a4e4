package dev.pgoutbox.tools.chaos;

import dev.pgoutbox.core.OutboxTransport;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * The ledger of a chaos run with {@code --transport messages}: delivered events leave no row, so
 * what PostgreSQL committed is read from a second logical slot created before the writers start and
 * never confirmed, which keeps every committed message in commit order (independent of the relays'
 * slot and code). Parked events' states come from the table, by id. The message layout is read here
 * on its own (docs/wal-messages.md, version 1), not through the relay's decoder.
 */
final class MessageLedger {

  private static final Pattern SEQ = Pattern.compile("\"seq\"\\s*:\\s*(\\d+)");

  private MessageLedger() {}

  static String slot(String walSlot) {
    return walSlot + "_ledger";
  }

  /** The ledger slot, streaming the relays' publication (pgoutput needs one) and messages. */
  static void createSlot(DataSource dataSource, String walSlot) throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute("SELECT pg_create_logical_replication_slot('" + slot(walSlot) + "', 'pgoutput')");
    }
  }

  static CommitLedger read(DataSource dataSource, String schema, String walSlot)
      throws SQLException {
    String prefix = OutboxTransport.messagePrefix(schema);
    Map<UUID, CommitLedger.Row> parked = new HashMap<>();
    List<CommitLedger.Row> rows = new ArrayList<>();
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      try (ResultSet rs =
          s.executeQuery(
              "select id, aggregate_id, (payload->>'seq')::int, event_type,"
                  + " processed_at is not null, dead_at is not null, last_error, attempts,"
                  + " retry_after::text from "
                  + schema
                  + ".outbox_events")) {
        while (rs.next()) {
          parked.put(
              (UUID) rs.getObject(1),
              new CommitLedger.Row(
                  rs.getString(2),
                  rs.getInt(3),
                  0,
                  null,
                  rs.getString(4),
                  rs.getBoolean(5),
                  rs.getBoolean(6),
                  rs.getString(7),
                  rs.getInt(8),
                  rs.getString(9)));
        }
      }
      long ordinal = 0;
      try (ResultSet rs =
          s.executeQuery(
              "select data from pg_logical_slot_peek_binary_changes('"
                  + slot(walSlot)
                  + "', NULL, NULL, 'proto_version', '1', 'publication_names', '"
                  + walSlot
                  + "', 'messages', 'true') where get_byte(data, 0) = 77")) {
        while (rs.next()) {
          ByteBuffer m = ByteBuffer.wrap(rs.getBytes(1));
          m.get(); // 'M'
          boolean transactional = (m.get() & 1) != 0;
          m.getLong(); // lsn
          int start = m.position();
          while (m.get() != 0) {
            // the prefix, up to its NUL
          }
          String messagePrefix =
              new String(m.array(), start, m.position() - start - 1, StandardCharsets.UTF_8);
          int length = m.getInt();
          if (!transactional || !messagePrefix.equals(prefix)) {
            m.position(m.position() + length);
            continue;
          }
          m.getLong(); // created_at
          m.get(); // version
          UUID id = new UUID(m.getLong(), m.getLong());
          String aggregateType = text(m);
          String aggregate = text(m);
          String eventType = text(m);
          String payload = text(m);
          if (!aggregateType.equals(Writers.AGGREGATE_TYPE)) {
            continue;
          }
          Matcher seq = SEQ.matcher(payload);
          if (!seq.find()) {
            throw new IllegalStateException("a chaos event without its seq: " + payload);
          }
          ordinal++;
          CommitLedger.Row row = parked.get(id);
          rows.add(
              row == null
                  // In flight or delivered: the checker tells which; nothing in the table.
                  ? new CommitLedger.Row(
                      aggregate,
                      Integer.parseInt(seq.group(1)),
                      ordinal,
                      null,
                      eventType,
                      false,
                      false,
                      null)
                  : new CommitLedger.Row(
                      row.aggregate(),
                      row.seq(),
                      ordinal,
                      null,
                      row.eventType(),
                      row.processed(),
                      row.dead(),
                      row.lastError(),
                      row.attempts(),
                      row.retryAfter()));
        }
      }
    }
    return new CommitLedger(rows);
  }

  private static String text(ByteBuffer m) {
    int length = m.getInt();
    String value = new String(m.array(), m.position(), length, StandardCharsets.UTF_8);
    m.position(m.position() + length);
    return value;
  }
}

package dev.pgoutbox.relay.internal;

import dev.pgoutbox.relay.WalSlotStats;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * What the core knows of a WAL relay's replication slot: its default name and how to read its
 * state. {@code OutboxAdmin} reports it without the WAL relay's module; the WAL relay reads its own
 * slot with the same statement.
 */
public final class WalSlotQuery {

  private WalSlotQuery() {}

  /** The slot and publication name a WAL relay on {@code schema} uses unless told otherwise. */
  public static String defaultName(String schema) {
    return "pgoutbox_" + schema;
  }

  /**
   * The slot's state ({@link WalSlotStats}); bind 1: the slot name. Columns: plugin, whether it is
   * this database's, wal_status, lag in bytes, active, and lag in milliseconds: the age of the
   * first pending event (by position) that is not parked, the oldest one the slot has not confirmed
   * (0 when none; the pending index serves it, as it serves {@code OutboxAdmin.oldestPendingAge}).
   */
  public static String statement(String schema) {
    return "SELECT plugin, database = current_database(), wal_status,"
        + " coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn), 0)::bigint,"
        + " active, coalesce((SELECT "
        + Sql.ageMillis("e.created_at")
        + " FROM "
        + schema
        + ".outbox_events e WHERE e.processed_at IS NULL AND NOT e.parked"
        + " ORDER BY e.position LIMIT 1), 0)"
        + " FROM pg_replication_slots WHERE slot_name = ?";
  }

  /**
   * The state of slot {@code slotName} for the outbox in {@code schema}, or null when this database
   * has no such slot; whatever its plugin (for {@code OutboxAdmin}, which only reports).
   */
  public static @Nullable WalSlotStats read(Connection connection, String schema, String slotName)
      throws SQLException {
    try (PreparedStatement ps = connection.prepareStatement(statement(schema))) {
      ps.setString(1, slotName);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() && rs.getBoolean(2) ? stats(slotName, rs) : null;
      }
    }
  }

  /** The stats in the current row of a result of {@link #statement}. */
  public static WalSlotStats stats(String slotName, ResultSet rs) throws SQLException {
    return new WalSlotStats(
        slotName,
        rs.getBoolean(5),
        rs.getLong(4),
        Duration.ofMillis(rs.getLong(6)),
        rs.getString(3));
  }
}

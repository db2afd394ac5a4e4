package dev.pgoutbox.relay.wal;

import dev.pgoutbox.relay.internal.ClaimedRow;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;

/** The reader's check that a new stream reads the rows pending when it attached (not skipped). */
final class WalUnseen {

  private final DataSource dataSource;
  private final WalSlot slot;
  private final String unseenSql;
  private final String stillUnsettledSql;

  /**
   * The pending rows not parked when this stream attached, and not read from it yet, by aggregate:
   * each committed before {@link #unseenUntil}, so the slot streams each before any transaction
   * that commits from there on, unless its confirmed position was moved past them (a {@code
   * pg_replication_slot_advance} by hand). See {@link #check}.
   */
  private final Map<ClaimedRow.AggregateKey, java.util.TreeSet<Long>> unseen = new HashMap<>();

  /** The WAL inserted when {@link #unseen} was read; 0 once checked. */
  private long unseenUntil;

  /** The check, on the reader's pinned pool. */
  WalUnseen(DataSource dataSource, String schema, WalSlot slot) {
    this.dataSource = dataSource;
    this.slot = slot;
    this.unseenSql = WalStatements.unparkedPending(schema);
    this.stillUnsettledSql = WalStatements.stillUnparkedPending(schema);
  }

  /** Whether rows noted at attach are still to be checked. */
  boolean pending() {
    return unseenUntil != 0;
  }

  /** The WAL inserted when the rows were noted: each of them committed before it. */
  long until() {
    return unseenUntil;
  }

  /**
   * Notes the pending rows that are not parked (the oldest {@link WalReader#UNSEEN_CHECK_LIMIT}),
   * and then the WAL inserted so far: each of them committed before it.
   */
  void load() throws SQLException {
    unseen.clear();
    unseenUntil = 0;
    long until;
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(unseenSql)) {
      ps.setInt(1, WalReader.UNSEEN_CHECK_LIMIT);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          unseen
              .computeIfAbsent(
                  new ClaimedRow.AggregateKey(rs.getString(2), rs.getString(3)),
                  k -> new java.util.TreeSet<>())
              .add(rs.getLong(1));
        }
      }
      try (Statement s = c.createStatement();
          ResultSet rs = s.executeQuery(WalStatements.WAL_INSERTED_AND_FLUSHED)) {
        rs.next();
        until = rs.getLong(1);
      }
    }
    unseenUntil = unseen.isEmpty() ? 0 : Math.max(1, until);
  }

  /** {@code row} was read from the stream. */
  void seen(ClaimedRow row) {
    if (unseenUntil == 0) {
      return;
    }
    java.util.TreeSet<Long> positions = unseen.get(row.aggregate());
    if (positions != null && positions.remove(row.position()) && positions.isEmpty()) {
      unseen.remove(row.aggregate());
    }
  }

  /** Whether a row of {@code row}'s aggregate with a lower position is still unseen. */
  boolean behind(ClaimedRow row) {
    if (unseenUntil == 0) {
      return false;
    }
    java.util.TreeSet<Long> positions = unseen.get(row.aggregate());
    return positions != null && !positions.isEmpty() && positions.first() < row.position();
  }

  /**
   * The stream has passed every commit before {@link #unseenUntil}: a row noted then and never read
   * that is still pending and not parked was skipped by the slot, whose confirmed position was
   * moved past it by hand. Only the table knows it now: the slot is unusable (see
   * docs/wal-relay.md).
   */
  void check() throws SQLException {
    List<Long> positions = new ArrayList<>();
    unseen.values().forEach(positions::addAll);
    unseen.clear();
    unseenUntil = 0;
    if (positions.isEmpty()) {
      return;
    }
    long skipped;
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(stillUnsettledSql)) {
      ps.setArray(1, c.createArrayOf("int8", positions.toArray(Long[]::new)));
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        skipped = rs.getLong(1);
      }
    }
    if (skipped > 0) {
      throw new SlotSkippedEventsException(
          "replication slot "
              + slot.slotName()
              + " skipped "
              + skipped
              + " pending event(s) committed before its confirmed position, which this relay"
              + " did not confirm (moved by hand, pg_replication_slot_advance?): they are only in"
              + " the table");
    }
  }

  /** The slot skipped events that are still pending: no reader may resume it. */
  static final class SlotSkippedEventsException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    SlotSkippedEventsException(String message) {
      super(message);
    }
  }
}

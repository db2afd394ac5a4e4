package dev.pgoutbox.relay.wal;

import dev.pgoutbox.relay.WalSlotStats;
import dev.pgoutbox.relay.internal.RelayLog;
import java.sql.SQLException;

/** The reader's finding that its slot is lost (dropped or invalidated), and where the WAL stood. */
final class WalSlotLoss {

  private final WalSlot slot;
  private final RelayLog log;

  /** The finding for {@code slot}. */
  WalSlotLoss(WalSlot slot, RelayLog log) {
    this.slot = slot;
    this.log = log;
  }

  /**
   * The slot looked dropped or invalidated: fails with {@link SlotLostException} when it still is
   * after the WAL position was read (any slot of the name created from that position on is a new
   * one, which an instance that falls back follows), else returns and the reader tries to attach
   * again at once.
   */
  void requireSlot() throws SQLException {
    long before = slot.walInserted();
    WalSlotStats state = slot.read();
    if (state == null) {
      throw new SlotLostException(missingSlot(), before);
    }
    if (state.lost()) {
      throw new SlotLostException(
          "replication slot " + slot.slotName() + " was invalidated (wal_status lost)", before);
    }
  }

  /** The WAL inserted so far, or {@link Long#MAX_VALUE} when it cannot be read. */
  long walInsertedOrNever() {
    try {
      return slot.walInserted();
    } catch (SQLException e) {
      log.warn("Could not read the WAL position ({})", e.toString());
      return Long.MAX_VALUE;
    }
  }

  /**
   * Why the slot is missing: an operator or another instance dropped it, or this server is a
   * promoted standby that never had it (PostgreSQL 16 and older keep no logical slot on a standby).
   */
  private String missingSlot() {
    return "replication slot "
        + slot.slotName()
        + " does not exist: it was dropped, or the database failed over to a standby that did not"
        + " have it";
  }

  /** The slot cannot be streamed any more: dropped or invalidated. */
  static final class SlotLostException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The WAL inserted before the slot was last seen gone or invalidated. */
    final long walBefore;

    SlotLostException(String message, long walBefore) {
      super(message);
      this.walBefore = walBefore;
    }
  }
}

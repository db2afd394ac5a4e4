package dev.pgoutbox.relay;

import org.jspecify.annotations.Nullable;

/**
 * The state of a {@link WalRelay}'s replication slot, read from {@code pg_replication_slots}.
 *
 * @param slotName the slot
 * @param active whether a reader streams it now
 * @param lagBytes WAL written since the slot's confirmed position ({@code pg_current_wal_lsn() -
 *     confirmed_flush_lsn}): what PostgreSQL keeps on disk for it, and how far the reader is behind
 * @param walStatus PostgreSQL's {@code wal_status}: {@code reserved}, {@code extended}, {@code
 *     unreserved}, or {@code lost} once the slot was invalidated ({@code max_slot_wal_keep_size})
 */
public record WalSlotStats(
    String slotName, boolean active, long lagBytes, @Nullable String walStatus) {

  /** Whether the slot was invalidated and can no longer stream. */
  public boolean lost() {
    return "lost".equals(walStatus);
  }
}

package dev.pgoutbox.relay;

import static java.util.Objects.requireNonNull;

import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * The state of a {@code WalRelay}'s replication slot, read from {@code pg_replication_slots} and
 * the outbox table.
 *
 * @param slotName the slot
 * @param active whether a reader streams it now
 * @param lagBytes WAL written since the slot's confirmed position ({@code pg_current_wal_lsn() -
 *     confirmed_flush_lsn}): what PostgreSQL keeps on disk for it, and how far the reader is behind
 * @param lagTime how long the oldest event still waiting for the slot has waited: the age ({@code
 *     clock_timestamp() - created_at}, database time) of the first pending event, in {@code
 *     position} order, that is not parked. The slot confirms a transaction only once all its events
 *     are completed or parked, so these are the events behind the slot's confirmed position, read
 *     or not, published or not; zero when there are none (caught up). It grows while the reader is
 *     held up (a slow broker, no reader attached) whether WAL is written or not; parked events (the
 *     table relay's) are left out: they are in {@link OutboxStats#oldestPendingAge()}. {@code
 *     created_at} is the writing transaction's start, so a long transaction counts from its start.
 *     Meaningless once the slot is {@link #lost()}
 * @param walStatus PostgreSQL's {@code wal_status}: {@code reserved}, {@code extended}, {@code
 *     unreserved}, or {@code lost} once the slot was invalidated ({@code max_slot_wal_keep_size})
 */
public record WalSlotStats(
    String slotName, boolean active, long lagBytes, Duration lagTime, @Nullable String walStatus) {

  /** Checks the values. */
  public WalSlotStats {
    requireNonNull(slotName, "slotName must not be null");
    requireNonNull(lagTime, "lagTime must not be null");
  }

  /** Whether the slot was invalidated and can no longer stream. */
  public boolean lost() {
    return "lost".equals(walStatus);
  }
}

package dev.pgoutbox.relay;

import java.time.Instant;
import org.jspecify.annotations.Nullable;

/**
 * The outbox table as PostgreSQL's statistics see it: the signals of a queue table falling behind
 * its vacuum. Published events leave dead rows behind (an update under {@link
 * Completion#MARK_PROCESSED}, a delete under {@link Completion#DELETE} or retention); vacuum
 * removes them unless a transaction anywhere holds back the xmin horizon ({@link
 * OutboxStats#oldestTransactionAge()}). Until then every claim steps over them.
 *
 * @param liveTuples estimated live rows ({@code pg_stat_user_tables.n_live_tup})
 * @param deadTuples estimated dead rows not yet removed by vacuum ({@code n_dead_tup})
 * @param autovacuumCount times autovacuum has vacuumed the table since statistics were reset
 * @param lastAutovacuum when autovacuum last finished on it; null if never
 * @param tableBytes size of the table ({@code pg_table_size}: heap, TOAST, free space and
 *     visibility maps)
 * @param indexBytes size of all its indexes ({@code pg_indexes_size})
 * @param pendingIndexBytes size of the two indexes of pending rows the claim reads ({@code
 *     outbox_events_pending_idx}, {@code outbox_events_pending_aggregate_idx}): a few pages while
 *     the relay keeps up; a window in which vacuum is held back grows them, and they keep that size
 *     until rebuilt ({@code OutboxAdmin.rebuildPendingIndexes()}, pgoutbox-admin)
 */
public record OutboxTableStats(
    long liveTuples,
    long deadTuples,
    long autovacuumCount,
    @Nullable Instant lastAutovacuum,
    long tableBytes,
    long indexBytes,
    long pendingIndexBytes) {

  /** No rows, never vacuumed, nothing on disk. */
  public static final OutboxTableStats EMPTY = new OutboxTableStats(0, 0, 0, null, 0, 0, 0);

  /**
   * Dead rows as a share of all rows, 0 to 1 (0 for an empty table). A queue table whose vacuum
   * keeps up stays low; a ratio that climbs and stays up means vacuum cannot remove them.
   */
  public double deadTupleRatio() {
    long all = liveTuples + deadTuples;
    return all == 0 ? 0 : (double) deadTuples / all;
  }
}

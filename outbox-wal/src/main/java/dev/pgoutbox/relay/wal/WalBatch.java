package dev.pgoutbox.relay.wal;

import dev.pgoutbox.relay.internal.ClaimedRow;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** The batch the reader assembles from the stream: its rows, their commits and their writers. */
final class WalBatch {

  private final List<ClaimedRow> batch = new ArrayList<>();

  /** The commit LSN of each row's transaction in {@link #batch}: its place in commit order. */
  private final List<Long> batchCommitLsns = new ArrayList<>();

  /** The characters of the payloads and headers in {@link #batch}. */
  private long batchBytes;

  /** The transactions that wrote the rows of {@link #batch} ({@link CommittingWriters}). */
  private final Set<Integer> batchWriters = new HashSet<>();

  /** Adds {@code row}, written by transaction {@code xid} that commits at {@code commitLsn}. */
  void add(ClaimedRow row, long commitLsn, int xid) {
    batch.add(row);
    batchCommitLsns.add(commitLsn);
    batchBytes += row.payload().length() + (row.headers() == null ? 0 : row.headers().length());
    batchWriters.add(xid);
  }

  boolean isEmpty() {
    return batch.isEmpty();
  }

  /** Rows in the batch. */
  int size() {
    return batch.size();
  }

  /** The characters of the payloads and headers in the batch. */
  long bytes() {
    return batchBytes;
  }

  /** Empties the batch. */
  void clear() {
    batch.clear();
    batchCommitLsns.clear();
    batchBytes = 0;
    batchWriters.clear();
  }

  /** The batch as it stands; empties it. */
  Taken take() {
    List<ClaimedRow> taken = List.copyOf(batch);
    Map<Long, Long> commitLsns = new HashMap<>();
    for (int i = 0; i < taken.size(); i++) {
      commitLsns.put(taken.get(i).position(), batchCommitLsns.get(i));
    }
    Set<Integer> writers = Set.copyOf(batchWriters);
    clear();
    return new Taken(taken, commitLsns, writers);
  }

  /** A batch taken: its rows, the commit LSN of each by position, and their writers. */
  record Taken(List<ClaimedRow> rows, Map<Long, Long> commitLsns, Set<Integer> writers) {}
}

package dev.pgoutbox.relay.wal;

import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Set;

/**
 * Waits until the writers of rows read from the WAL are visible to new snapshots. Logical decoding
 * sends a transaction once its commit record is flushed, and PostgreSQL makes the transaction
 * visible to other sessions a moment later (longer while a synchronous standby is awaited): an
 * {@code UPDATE ... WHERE position = ANY(?)} taken in between does not see the rows and matches
 * nothing, silently. The completer would leave a published row pending for good, and a parking
 * would miss the failed row whose aggregate it holds back. Each write by position therefore runs
 * only after this wait, in a later statement (a statement's snapshot is taken when it starts).
 */
final class CommittingWriters {

  /**
   * How many of the given transactions ({@code bigint[]} of the 32-bit xids pgoutput sends) are
   * still in progress to new snapshots, each xid widened to {@code xid8} around the current
   * snapshot's {@code xmax} ({@link #widened}).
   */
  static final String IN_PROGRESS =
      "SELECT pg_catalog.count(*) FROM pg_catalog.unnest(?::pg_catalog.int8[]) AS w(xid),"
          + " (SELECT pg_catalog.pg_snapshot_xmax(pg_catalog.pg_current_snapshot())::text::bigint"
          + " AS next) AS s"
          + " WHERE pg_catalog.pg_xact_status(("
          + widened("s.next", "w.xid")
          + ")::text::xid8) = 'in progress'";

  /**
   * The SQL of the full transaction id ({@code bigint}) of the 32-bit {@code xid} nearest to the
   * full id {@code reference}, behind it or ahead of it by less than 2^31. The reference is a
   * snapshot's {@code xmax}: one past the latest transaction to have <em>completed</em>, so a
   * writer still committing (the very case this class waits out) can be ahead of it, and an xid
   * assigned before a wrap-around is behind it in the previous epoch. Taking every xid above {@code
   * xmax}'s low half for the previous epoch gave a writer ahead of it an id an epoch too old: in
   * epoch 0 an error ("transaction ID ... is in the future"), in later epochs the status of a
   * long-finished transaction, and a completion that matched nothing.
   */
  static String widened(String reference, String xid) {
    // (xid - low(reference)) taken modulo 2^32 into [-2^31, 2^31): 2^32 + 2^31 keeps the
    // dividend positive, since PostgreSQL's % keeps the sign of the dividend.
    return "("
        + reference
        + " + ((("
        + xid
        + ") - ("
        + reference
        + " & 4294967295) + 6442450944) % 4294967296) - 2147483648)";
  }

  /** Pause between two looks while a writer is still committing. */
  private static final long PAUSE_MILLIS = 1;

  private CommittingWriters() {}

  /**
   * Returns once every transaction in {@code xids} is visible to new snapshots on {@code
   * connection} (at once when none is still committing, the common case).
   *
   * @throws SQLException also when interrupted while waiting (the interrupt is kept)
   */
  static void awaitVisible(Connection connection, Set<Integer> xids) throws SQLException {
    if (xids.isEmpty()) {
      return;
    }
    Long[] unsigned = xids.stream().map(Integer::toUnsignedLong).toArray(Long[]::new);
    try (PreparedStatement statement = connection.prepareStatement(IN_PROGRESS)) {
      Array array = connection.createArrayOf("int8", unsigned);
      try {
        statement.setArray(1, array);
        // Polled: SQL offers no wait on another transaction's end. The first look is the only one
        // unless a writer is still committing, a moment of microseconds (longer while its commit
        // waits for a synchronous standby, and then so does this).
        while (inProgress(statement) > 0) {
          pause();
        }
      } finally {
        array.free();
      }
    }
  }

  private static void pause() throws SQLException {
    try {
      Thread.sleep(PAUSE_MILLIS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new SQLException("interrupted while waiting for writers to commit", e);
    }
  }

  private static long inProgress(PreparedStatement statement) throws SQLException {
    try (ResultSet rs = statement.executeQuery()) {
      rs.next();
      return rs.getLong(1);
    }
  }
}

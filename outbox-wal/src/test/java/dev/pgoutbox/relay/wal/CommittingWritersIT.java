package dev.pgoutbox.relay.wal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.testing.TestSchema;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The wait for writers still committing, on a real PostgreSQL: a writer whose xid is ahead of the
 * current snapshot's {@code xmax} (a later transaction began before an earlier one completed) is
 * still seen as in progress, and the xids pgoutput sends widen to the right epoch on both sides of
 * a wrap-around.
 */
class CommittingWritersIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated(2);

  private static final long EPOCH = 1L << 32;

  /**
   * Two writers hold their xids open, the later one ahead of {@code xmax} (one past the latest
   * completed transaction). Both count as in progress; the check used to take the later one for the
   * previous epoch and failed with "transaction ID ... is in the future" (and in later epochs read
   * the status of a long-finished transaction instead).
   */
  @Test
  void aWriterAheadOfTheSnapshotsXmaxIsInProgressUntilItCommits() throws Exception {
    try (Connection earlier = db.connect();
        Connection later = db.connect();
        Connection checker = db.connect()) {
      earlier.setAutoCommit(false);
      later.setAutoCommit(false);
      long earlierXid = assignXid(earlier);
      long laterXid = assignXid(later);
      long xmax =
          queryLong(checker, "select pg_snapshot_xmax(pg_current_snapshot())::text::bigint");
      assertThat(laterXid).as("the later writer is ahead of xmax").isGreaterThan(xmax);

      assertThat(inProgress(checker, earlierXid, laterXid)).isEqualTo(2);
      assertThat(inProgress(checker, laterXid)).isEqualTo(1);

      CompletableFuture<Void> waiter =
          CompletableFuture.runAsync(
              () -> {
                try {
                  CommittingWriters.awaitVisible(checker, Set.of((int) earlierXid, (int) laterXid));
                } catch (SQLException e) {
                  throw new IllegalStateException(e);
                }
              });
      later.commit();
      assertThat(waiter).as("still waiting for the earlier writer").isNotDone();
      earlier.commit();
      waiter.get(30, TimeUnit.SECONDS);
      assertThat(inProgress(checker, earlierXid, laterXid)).isZero();
    }
  }

  @ParameterizedTest(name = "xid {1} near {0} is {2}")
  @CsvSource({
    // reference (epoch, low) as a full id, 32-bit xid, expected full id
    "4294967301, 4294967290, 4294967290", // behind, across the wrap: the previous epoch
    "4294967396, 101, 4294967397", // ahead of xmax in the same epoch
    "4294967290, 3, 4294967299", // ahead of xmax, across the wrap: the next epoch
    "8589934692, 50, 8589934642", // behind in the same epoch
    "100, 99, 99" // epoch 0, behind
  })
  void anXidWidensToTheFullIdNearestTheReference(long reference, long xid, long expected)
      throws Exception {
    try (Connection c = db.connect()) {
      assertThat(
              queryLong(
                  c,
                  "select " + CommittingWriters.widened(reference + "::bigint", xid + "::bigint")))
          .isEqualTo(expected);
    }
    assertThat(expected % EPOCH).isEqualTo(xid);
  }

  private static long assignXid(Connection connection) throws SQLException {
    return queryLong(connection, "select pg_current_xact_id()::text::bigint") % EPOCH;
  }

  private static long inProgress(Connection connection, long... xids) throws SQLException {
    try (PreparedStatement statement = connection.prepareStatement(CommittingWriters.IN_PROGRESS)) {
      Long[] values = java.util.Arrays.stream(xids).boxed().toArray(Long[]::new);
      Array array = connection.createArrayOf("int8", values);
      statement.setArray(1, array);
      try (ResultSet rs = statement.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  private static long queryLong(Connection connection, String sql) throws SQLException {
    try (Statement statement = connection.createStatement();
        ResultSet rs = statement.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}

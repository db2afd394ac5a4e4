package dev.pgoutbox.core;

import dev.pgoutbox.db.testing.TestSchema;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/** Polling with a deadline (never a fixed sleep), and what a backend is waiting for. */
final class Waits {

  static final Duration DEADLINE = Duration.ofSeconds(20);

  private Waits() {}

  static void until(String what, BooleanSupplier condition) {
    long deadline = System.nanoTime() + DEADLINE.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("Not within " + DEADLINE + ": " + what);
      }
      LockSupport.parkNanos(Duration.ofMillis(5).toNanos());
    }
  }

  /** Waits until backend {@code pid} waits for a lock of {@code locktype}. */
  static void untilWaitingForLock(TestSchema db, int pid, String locktype) {
    until(
        "backend " + pid + " waits for a " + locktype + " lock",
        () ->
            queryLong(
                    db,
                    "SELECT count(*) FROM pg_locks WHERE pid = "
                        + pid
                        + " AND locktype = '"
                        + locktype
                        + "' AND NOT granted")
                > 0);
  }

  static int backendPid(Connection connection) throws SQLException {
    return (int) queryLong(connection, "SELECT pg_backend_pid()");
  }

  static long queryLong(TestSchema db, String sql) {
    try (Connection connection = db.dataSource().getConnection()) {
      return queryLong(connection, sql);
    } catch (SQLException e) {
      throw new IllegalStateException(sql, e);
    }
  }

  static long queryLong(Connection connection, String sql) throws SQLException {
    try (PreparedStatement statement = connection.prepareStatement(sql);
        ResultSet rs = statement.executeQuery()) {
      rs.next();
      return rs.getLong(1);
    }
  }
}

package dev.pgoutbox.example.orders;

import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;

/** Runs work in one JDBC transaction: commit on return, roll back on any exception. */
final class Transactions {

  /** Work on a connection in a transaction. */
  @FunctionalInterface
  interface Work<T> {
    T run(Connection tx) throws SQLException;
  }

  private Transactions() {}

  static <T> T inTransaction(DataSource dataSource, Work<T> work) {
    try (Connection connection = dataSource.getConnection()) {
      connection.setAutoCommit(false);
      try {
        T result = work.run(connection);
        connection.commit();
        return result;
      } catch (SQLException | RuntimeException | Error e) {
        try {
          connection.rollback();
        } catch (SQLException rollback) {
          e.addSuppressed(rollback);
        }
        throw e;
      } finally {
        connection.setAutoCommit(true);
      }
    } catch (SQLException e) {
      throw new DatabaseException(e.getMessage(), e);
    }
  }

  /** A database failure, unchecked, with PostgreSQL's message. */
  static final class DatabaseException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    DatabaseException(String message, Throwable cause) {
      super(message, cause);
    }
  }
}

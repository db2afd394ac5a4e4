package dev.pgoutbox.testing;

import java.sql.Connection;
import java.sql.SQLException;

/**
 * A PostgreSQL server tests connect to: {@link TestDatabase} or {@link LogicalDecodingDatabase}.
 */
public interface TestServer {

  /** JDBC URL of the server's test database, with user and password as URL parameters. */
  String jdbcUrl();

  /** A new unpooled connection (autocommit on); the caller closes it. */
  Connection connect() throws SQLException;
}

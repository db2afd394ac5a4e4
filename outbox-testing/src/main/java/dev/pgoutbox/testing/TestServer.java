package dev.pgoutbox.testing;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Properties;

/**
 * A PostgreSQL server tests connect to: {@link TestDatabase} or {@link LogicalDecodingDatabase}.
 */
public interface TestServer {

  /** JDBC URL of the server's test database, with user and password as URL parameters. */
  String jdbcUrl();

  /** A new unpooled connection (autocommit on) to {@link #jdbcUrl()}; the caller closes it. */
  default Connection connect() throws SQLException {
    return DriverManager.getConnection(jdbcUrl(), new Properties());
  }
}

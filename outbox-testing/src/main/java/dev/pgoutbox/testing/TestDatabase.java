package dev.pgoutbox.testing;

import java.sql.Connection;
import java.sql.SQLException;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.postgresql.PostgreSQLContainer;

/**
 * The one real PostgreSQL server the tests of this JVM share. Resolution order:
 *
 * <ol>
 *   <li>{@value #URL_VARIABLE} (environment) or {@code pgoutbox.test.jdbcUrl} (system property);
 *   <li>Testcontainers ({@code postgres:17-alpine}), when a Docker engine answers;
 *   <li>an {@link EmbeddedPostgresServer}, unless {@value #NO_EMBEDDED_VARIABLE} is set;
 *   <li>otherwise every database test fails with a message saying how to provide one.
 * </ol>
 *
 * A database test never skips: a missing database is a failure. Thread-safe.
 */
public final class TestDatabase implements TestServer {

  /** Environment variable with the JDBC URL of a PostgreSQL server the tests may use. */
  public static final String URL_VARIABLE = "PGOUTBOX_TEST_JDBC_URL";

  /** Set to any value to refuse the embedded fallback (CI sets the URL instead). */
  public static final String NO_EMBEDDED_VARIABLE = "PGOUTBOX_TEST_NO_EMBEDDED";

  private static final SharedServer<TestDatabase> shared =
      new SharedServer<>(TestDatabase::resolve);

  private final String jdbcUrl;
  private final String source;

  private TestDatabase(String jdbcUrl, String source) {
    this.jdbcUrl = jdbcUrl;
    this.source = source;
  }

  /** The shared server, started on first use. */
  public static TestDatabase get() {
    return shared.get();
  }

  /** JDBC URL of the server's test database, with user and password as URL parameters. */
  @Override
  public String jdbcUrl() {
    return jdbcUrl;
  }

  /** Where the server came from: the environment, Testcontainers or embedded. */
  public String source() {
    return source;
  }

  private static TestDatabase resolve() {
    String url = SharedServer.configuredUrl(URL_VARIABLE, "pgoutbox.test.jdbcUrl");
    if (url != null) {
      return checked(new TestDatabase(url, "environment (" + URL_VARIABLE + ")"));
    }
    if (dockerAvailable()) {
      return checked(new TestDatabase(Container.start(), "Testcontainers (postgres:17-alpine)"));
    }
    if (System.getenv(NO_EMBEDDED_VARIABLE) == null) {
      try {
        EmbeddedPostgresServer embedded = EmbeddedPostgresServer.start();
        // Stopped at exit at once: no test owns it to close it.
        Runtime.getRuntime().addShutdownHook(new Thread(embedded::close));
        return checked(new TestDatabase(embedded.jdbcUrl(), "embedded PostgreSQL"));
      } catch (RuntimeException e) {
        throw new IllegalStateException(
            noDatabaseMessage() + " (embedded PostgreSQL failed: " + e + ")", e);
      }
    }
    throw new IllegalStateException(noDatabaseMessage());
  }

  private static String noDatabaseMessage() {
    return "No PostgreSQL for the database tests. Set "
        + URL_VARIABLE
        + "=jdbc:postgresql://host:5432/db?user=...&password=... (PostgreSQL 14+), or start a"
        + " Docker engine for Testcontainers, or unset "
        + NO_EMBEDDED_VARIABLE
        + " to use an embedded PostgreSQL";
  }

  private static boolean dockerAvailable() {
    try {
      return DockerClientFactory.instance().isDockerAvailable();
    } catch (RuntimeException | LinkageError e) {
      return false;
    }
  }

  private static TestDatabase checked(TestDatabase database) {
    try (Connection connection = database.connect()) {
      if (!connection.isValid(5)) {
        throw new IllegalStateException("PostgreSQL at " + database.source + " is not valid");
      }
      return database;
    } catch (SQLException e) {
      throw new IllegalStateException(
          "Cannot connect to the test PostgreSQL from " + database.source + ": " + e.getMessage(),
          e);
    }
  }

  /**
   * The Testcontainers server, in a class of its own: loaded only when Docker answers, so the
   * runnable jars that leave Testcontainers out never need it.
   */
  private static final class Container {
    static String start() {
      PostgreSQLContainer container = new PostgreSQLContainer("postgres:17-alpine");
      container.start();
      Runtime.getRuntime().addShutdownHook(new Thread(container::stop));
      String url = container.getJdbcUrl();
      return url
          + (url.contains("?") ? "&" : "?")
          + "user="
          + container.getUsername()
          + "&password="
          + container.getPassword();
    }
  }
}

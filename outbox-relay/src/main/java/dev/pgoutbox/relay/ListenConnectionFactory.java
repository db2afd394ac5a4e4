package dev.pgoutbox.relay;

import static java.util.Objects.requireNonNull;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Properties;

/**
 * Opens the relay's dedicated {@code LISTEN} connection: unpooled, because a pool may reset,
 * validate or retire a connection at any time, and a notification that arrives on a connection the
 * pool just closed is lost.
 *
 * <pre>{@code
 * ListenConnectionFactory listen = ListenConnectionFactory.of("jdbc:postgresql://db:5432/app", "relay", secret);
 * }</pre>
 */
@FunctionalInterface
public interface ListenConnectionFactory {

  /** A new connection; the caller closes it. */
  Connection open() throws SQLException;

  /**
   * Connections from {@link DriverManager}, with {@code tcpKeepAlive=true} so that a dead peer is
   * noticed even while the connection only waits, and {@link ListenSocketFactory} as pgjdbc's
   * {@code socketFactory} (unless the URL or the properties name one) so that reading notifications
   * never waits for the next one.
   */
  static ListenConnectionFactory of(String jdbcUrl, String user, String password) {
    requireNonNull(jdbcUrl, "jdbcUrl must not be null");
    Properties properties = new Properties();
    if (user != null) {
      properties.setProperty("user", user);
    }
    if (password != null) {
      properties.setProperty("password", password);
    }
    return of(jdbcUrl, properties);
  }

  /**
   * Connections from {@link DriverManager} with these properties, plus {@code tcpKeepAlive} and
   * {@code socketFactory} as in {@link #of(String, String, String)}.
   */
  static ListenConnectionFactory of(String jdbcUrl, Properties properties) {
    requireNonNull(jdbcUrl, "jdbcUrl must not be null");
    Properties copy = new Properties();
    copy.putAll(properties);
    copy.putIfAbsent("tcpKeepAlive", "true");
    copy.putIfAbsent("socketFactory", ListenSocketFactory.class.getName());
    return () -> DriverManager.getConnection(jdbcUrl, copy);
  }
}

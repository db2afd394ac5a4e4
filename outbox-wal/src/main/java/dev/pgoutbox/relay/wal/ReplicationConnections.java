package dev.pgoutbox.relay.wal;

import dev.pgoutbox.relay.ListenConnectionFactory;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.postgresql.PGConnection;
import org.postgresql.ds.common.BaseDataSource;
import org.postgresql.replication.PGReplicationStream;

/**
 * Opens the WAL reader's replication connections: the URL and credentials of the host's data source
 * (HikariCP with {@code setJdbcUrl}, or a pgjdbc data source), with the properties pgjdbc's
 * replication API needs.
 */
public final class ReplicationConnections {

  private static final String HIKARI = "com.zaxxer.hikari.HikariDataSource";

  private ReplicationConnections() {}

  /** Connections to {@code jdbcUrl} with {@code properties}, as replication connections. */
  public static ListenConnectionFactory of(String jdbcUrl, Properties properties) {
    Properties copy = replicationProperties(properties);
    return () -> DriverManager.getConnection(jdbcUrl, copy);
  }

  /** {@code properties} with what a replication connection needs added. */
  static Properties replicationProperties(Properties properties) {
    Properties copy = new Properties();
    copy.putAll(properties);
    copy.setProperty("replication", "database");
    copy.setProperty("preferQueryMode", "simple");
    copy.setProperty("assumeMinServerVersion", "10");
    copy.putIfAbsent("tcpKeepAlive", "true");
    // Not ListenConnectionFactory.of: its sockets answer pgjdbc's 1 ms probe at once always, and
    // the reader's readPending() loop relies on that probe to wait while the slot is idle. These
    // answer at once only when the reader holds a whole transaction (ReplicationSocketFactory).
    copy.putIfAbsent("socketFactory", ReplicationSocketFactory.class.getName());
    return copy;
  }

  /**
   * Starts streaming {@code slotName} on a replication connection through {@code pgoutput}, version
   * 1, for {@code publicationName}, with a status update to the server every second. The WAL
   * reader's stream, and the bench's reader that only counts what the server decodes.
   */
  public static PGReplicationStream startPgOutput(
      Connection replicationConnection, String slotName, String publicationName)
      throws SQLException {
    return startPgOutput(replicationConnection, slotName, publicationName, false);
  }

  /**
   * {@link #startPgOutput(Connection, String, String)}, with {@code messages 'true'} when {@code
   * messages} (PostgreSQL 14 and later): the stream also carries logical decoding messages, the
   * message transport's events.
   */
  public static PGReplicationStream startPgOutput(
      Connection replicationConnection, String slotName, String publicationName, boolean messages)
      throws SQLException {
    var builder =
        replicationConnection
            .unwrap(PGConnection.class)
            .getReplicationAPI()
            .replicationStream()
            .logical()
            .withSlotName(slotName)
            .withSlotOption("proto_version", 1)
            .withSlotOption("publication_names", publicationName);
    if (messages) {
      builder = builder.withSlotOption("messages", true);
    }
    return builder.withStatusInterval(1, TimeUnit.SECONDS).start();
  }

  /** Replication connections to where {@code dataSource} connects, or null when unknown. */
  public static @Nullable ListenConnectionFactory derive(DataSource dataSource) {
    try {
      if (dataSource instanceof BaseDataSource pg) {
        return of(pg.getUrl(), credentials(pg.getUser(), pg.getPassword(), null));
      }
      if (dataSource.getClass().getName().equals(HIKARI)) {
        String url = (String) call(dataSource, "getJdbcUrl");
        if (url == null) {
          return null;
        }
        return of(
            url,
            credentials(
                (String) call(dataSource, "getUsername"),
                (String) call(dataSource, "getPassword"),
                (Properties) call(dataSource, "getDataSourceProperties")));
      }
      return null;
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      return null;
    }
  }

  private static Properties credentials(
      @Nullable String user, @Nullable String password, @Nullable Properties extra) {
    Properties properties = new Properties();
    if (extra != null) {
      properties.putAll(extra);
    }
    if (user != null) {
      properties.setProperty("user", user);
    }
    if (password != null) {
      properties.setProperty("password", password);
    }
    return properties;
  }

  private static @Nullable Object call(Object target, String getter)
      throws ReflectiveOperationException {
    return target.getClass().getMethod(getter).invoke(target);
  }
}

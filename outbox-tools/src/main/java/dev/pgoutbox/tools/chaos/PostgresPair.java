package dev.pgoutbox.tools.chaos;

import dev.pgoutbox.testing.EmbeddedPostgresServer;
import dev.pgoutbox.testing.TcpProxy;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;

/**
 * The chaos run's PostgreSQL: the primary, and with WAL relays a streaming standby cloned from it,
 * which a fault promotes. Everyone reaches the primary through {@link TcpProxy}s (the relays'
 * network, the writers' address), which a promotion moves to the standby as a virtual IP would. The
 * standby is asynchronous until the promotion makes it synchronous and waits for it to catch up:
 * every commit a writer saw succeed is on it when it is promoted. Thread-safe.
 */
final class PostgresPair implements AutoCloseable {

  private static final long SYNC_WAIT_NANOS = TimeUnit.SECONDS.toNanos(60);

  private final Map<String, String> standbySettings;
  private final List<TcpProxy> addresses = new ArrayList<>();
  private final List<EmbeddedPostgresServer> retired = new ArrayList<>();
  private volatile EmbeddedPostgresServer primary;
  private volatile @Nullable EmbeddedPostgresServer standby;
  private int standbys;
  private int promotions;

  PostgresPair(EmbeddedPostgresServer primary, Map<String, String> standbySettings) {
    this.primary = primary;
    this.standbySettings = standbySettings;
  }

  /** The server that is primary now. */
  EmbeddedPostgresServer primary() {
    return primary;
  }

  /** A proxy to the primary that {@link #promote()} moves to the new one; returns it. */
  synchronized TcpProxy address(TcpProxy proxy) {
    addresses.add(proxy);
    return proxy;
  }

  /**
   * Clones the primary into a new standby, asynchronous, and returns once it streams. The writers
   * do not wait for it; {@link #promote()} makes it synchronous and caught up first.
   */
  synchronized String addStandby() throws SQLException {
    String name = "standby" + (++standbys);
    EmbeddedPostgresServer clone = primary.startStandby(name, standbySettings);
    standby = clone;
    awaitTrue(
        name + " streaming",
        "select state = 'streaming' from pg_stat_replication where application_name = '"
            + name
            + "'");
    return name + " (port " + clone.port() + ") cloned from the primary, streaming";
  }

  /**
   * Makes the standby synchronous and waits until it has flushed everything the primary had written
   * then, so that every commit a writer saw succeed is on it; kills the primary (SIGKILL), promotes
   * the standby and moves every address to it. The old primary is kept until {@link #close()}.
   */
  synchronized String promote() throws SQLException {
    EmbeddedPostgresServer next = standby;
    if (next == null) {
      throw new IllegalStateException("no standby to promote");
    }
    EmbeddedPostgresServer old = primary;
    String name = "standby" + standbys;
    execute(old, "ALTER SYSTEM SET synchronous_standby_names = '" + name + "'");
    execute(old, "SELECT pg_reload_conf()");
    awaitTrue(
        name + " synchronous",
        "select sync_state = 'sync' from pg_stat_replication where application_name = '"
            + name
            + "'");
    // Commits acknowledged before it became synchronous are below this position.
    String written = query(old, "select pg_current_wal_lsn()");
    awaitTrue(
        name + " flushed up to " + written,
        "select flush_lsn >= '"
            + written
            + "'::pg_lsn from pg_stat_replication where application_name = '"
            + name
            + "'");
    old.crash();
    retired.add(old);
    execute(next, "SELECT pg_promote(true, 60)");
    primary = next;
    standby = null;
    promotions++;
    for (TcpProxy address : addresses) {
      address.retarget(next.port());
      address.cut(); // connections to the dead primary
      address.restore();
    }
    return "PostgreSQL primary killed once its standby had every acknowledged commit, the standby"
        + " promoted (port "
        + next.port()
        + "), the relays' and writers' addresses moved to it";
  }

  /** Polls {@code sql} (one boolean) on the primary until it answers true, at most 60 s. */
  private void awaitTrue(String what, String sql) throws SQLException {
    long deadline = System.nanoTime() + SYNC_WAIT_NANOS;
    while (!"t".equals(query(primary, sql))) {
      if (System.nanoTime() - deadline > 0) {
        throw new IllegalStateException(what + ": not after 60 s");
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
    }
  }

  /** Standbys promoted so far. */
  synchronized int promotions() {
    return promotions;
  }

  private static void execute(EmbeddedPostgresServer server, String sql) throws SQLException {
    try (Connection c = DriverManager.getConnection(server.jdbcUrl(), new Properties());
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  private static @Nullable String query(EmbeddedPostgresServer server, String sql)
      throws SQLException {
    try (Connection c = DriverManager.getConnection(server.jdbcUrl(), new Properties());
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      return rs.next() ? rs.getString(1) : null;
    }
  }

  @Override
  public synchronized void close() {
    EmbeddedPostgresServer current = standby;
    if (current != null) {
      current.close();
    }
    primary.close();
    retired.forEach(EmbeddedPostgresServer::close);
  }

  @Override
  public String toString() {
    return "PostgresPair[primary " + primary + ", standby " + standby + "]";
  }
}

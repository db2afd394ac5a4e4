package dev.pgoutbox.relay.wal;

import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.relay.ListenConnectionFactory;
import dev.pgoutbox.relay.internal.RelayLog;
import dev.pgoutbox.relay.internal.Sql;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * The creation of the WAL relay's slot: under the creation lock, through a staging slot and its
 * copy, with the backlog parked; and making it a failover slot.
 */
final class WalSlotCreation {

  private final WalSlot slot;
  private final DataSource dataSource;
  private final String schema;
  private final String slotName;
  private final RelayLog log;
  private final Duration creationTimeout;

  /**
   * The creation of {@code slot}, on its pinned pool; it gives up after {@code creationTimeout}.
   */
  WalSlotCreation(
      WalSlot slot, DataSource dataSource, String schema, RelayLog log, Duration creationTimeout) {
    this.slot = slot;
    this.dataSource = dataSource;
    this.schema = schema;
    this.slotName = slot.slotName();
    this.log = log;
    this.creationTimeout = creationTimeout;
  }

  /**
   * Creates the slot with the backlog parked, so that no instance can attach to it before: under
   * the creation lock ({@link WalStatements#creationLock}, held by a second session in a
   * transaction that writes nothing, so that it holds up no slot's creation), a temporary
   * <i>staging</i> slot is created, the backlog parked and committed, and only then the slot itself
   * made as a copy of the staging one (same consistent point). A start that dies midway leaves no
   * slot: the staging slot goes with its session. A second instance starting meanwhile waits on the
   * lock and finds the slot made.
   *
   * @return false when another instance made the slot meanwhile
   */
  boolean create(Connection connection, @Nullable ListenConnectionFactory failoverVia)
      throws SQLException {
    try (Connection lock = dataSource.getConnection()) {
      lock.setAutoCommit(false);
      boolean committed = false;
      try {
        holdCreationLock(lock);
        if (slot.read(connection) != null) {
          return false; // Made, backlog parked, by another instance while this one waited.
        }
        createAndPark(connection);
        if (failoverVia != null) {
          // before any reader may attach: under the lock
          enableFailover(connection, true, failoverVia);
        }
        lock.commit();
        committed = true;
        return true;
      } finally {
        try {
          if (!committed) {
            lock.rollback();
          }
          // Before the pool takes it back: its session's own search path is put back on close,
          // which a transaction left open would undo.
          lock.setAutoCommit(true);
        } catch (SQLException ignored) {
          // A broken connection: the pool discards it.
        }
      }
    }
  }

  private void holdCreationLock(Connection lock) throws SQLException {
    // The lock waits at most as long as the other instance may take to create its staging slot
    // and park; the transaction may stay idle while this one works, as long again.
    String wait =
        Long.toString(creationTimeout.toMillis() + Sql.WRITE_TRANSACTION_TIMEOUT.toMillis());
    try (PreparedStatement ps = lock.prepareStatement(WalStatements.CREATION_LOCK)) {
      ps.setString(1, wait);
      ps.setString(
          2,
          Long.toString(2 * creationTimeout.toMillis() + Sql.WRITE_TRANSACTION_TIMEOUT.toMillis()));
      ps.setString(3, slotName);
      ps.execute();
    } catch (SQLException e) {
      if ("55P03".equals(e.getSQLState())) {
        throw new OutboxException(
            "pgoutbox-relay["
                + log.relayName()
                + "] - another instance is creating replication slot "
                + slotName
                + " and parking the events older than it, and had not finished within "
                + wait
                + " ms: start again (nothing was created by this start)",
            e);
      }
      throw e;
    }
  }

  private void createAndPark(Connection connection) throws SQLException {
    String staging = "pgoutbox_staging_" + backendPid(connection);
    try (PreparedStatement ps = connection.prepareStatement(WalStatements.CREATE_STAGING_SLOT)) {
      ps.setString(1, staging);
      // PostgreSQL finishes a logical slot once every transaction running when it began has ended:
      // one left open (or prepared and never resolved) would hold the start for as long.
      ps.setQueryTimeout((int) Math.max(1, creationTimeout.toSeconds()));
      ps.execute();
    } catch (SQLException e) {
      if ("57014".equals(e.getSQLState())) {
        throw new OutboxException(
            "pgoutbox-relay["
                + log.relayName()
                + "] - could not create replication slot "
                + slotName
                + " within "
                + creationTimeout
                + ": PostgreSQL creates a logical slot once every transaction that was running when"
                + " it began has ended, and these had not: "
                + openTransactions(connection)
                + ". End them (COMMIT PREPARED or ROLLBACK PREPARED '<gid>' for a prepared"
                + " transaction; commit, roll back or pg_terminate_backend(pid) for a session),"
                + " then start again; nothing was created (WalRelay.Builder.slotCreationTimeout"
                + " sets how long the start waits)",
            e);
      }
      throw new OutboxException(
          "pgoutbox-relay["
              + log.relayName()
              + "] - could not create replication slot "
              + slotName
              + " ("
              + e.getMessage()
              + "): the relay's role needs the REPLICATION attribute (ALTER ROLE <role>"
              + " REPLICATION), or create the slot with SELECT pg_create_logical_replication_slot('"
              + slotName
              + "', 'pgoutput') and set createSlot(false)",
          e);
    }
    // Rows committed before the slot's consistent point will never be decoded: the drainer's.
    int parked;
    try {
      parked = parkBacklog(connection);
      try (PreparedStatement ps = connection.prepareStatement(WalStatements.COPY_SLOT)) {
        ps.setString(1, staging);
        ps.setString(2, slotName);
        ps.execute();
      }
    } catch (SQLException | RuntimeException e) {
      String staged = dropStaging(connection, staging, e);
      throw new OutboxException(
          "pgoutbox-relay["
              + log.relayName()
              + "] - could not park the events pending before the new replication slot "
              + slotName
              + " ("
              + e.getMessage()
              + "); the slot was not created ("
              + staged
              + "), so the next start creates it and parks them",
          e);
    }
    dropStaging(connection, staging, null);
    log.info(
        "Created replication slot {}; {} pending event(s) older than it are left to the table"
            + " relay",
        slotName,
        parked);
  }

  /**
   * Drops the temporary staging slot; when that fails, ends the session, which drops it too.
   * Returns what became of it, for the start's message.
   */
  private String dropStaging(Connection connection, String staging, @Nullable Exception cause) {
    try (PreparedStatement ps = connection.prepareStatement(WalStatements.DROP_SLOT)) {
      ps.setString(1, staging);
      ps.execute();
      return "its temporary staging slot " + staging + " was dropped";
    } catch (SQLException e) {
      if ("42704".equals(e.getSQLState())) {
        // PostgreSQL drops a session's temporary slots at its first error.
        return "its temporary staging slot " + staging + " went with the error";
      }
      if (cause != null) {
        cause.addSuppressed(e);
      }
      log.warn(
          "Could not drop the temporary staging slot {} ({}); closing its session, which drops it",
          staging,
          e.getMessage());
      try {
        connection.abort(Runnable::run);
      } catch (SQLException | RuntimeException ignored) {
        // Closed already: the server ends the session, and its temporary slot, all the same.
      }
      return "its temporary staging slot " + staging + " goes with its session, which was closed";
    }
  }

  private static int backendPid(Connection connection) throws SQLException {
    return connection.unwrap(org.postgresql.PGConnection.class).getBackendPID();
  }

  /** The transactions that hold up a slot's creation, as the message of a failed start. */
  private static String openTransactions(Connection connection) {
    List<String> found = new ArrayList<>();
    try (Statement s = connection.createStatement();
        ResultSet rs = s.executeQuery(WalStatements.OPEN_TRANSACTIONS)) {
      while (rs.next()) {
        found.add(rs.getString(1));
      }
    } catch (SQLException e) {
      return "(they could not be listed: " + e.getMessage() + ")";
    }
    return found.isEmpty() ? "none is open any more" : String.join("; ", found);
  }

  /**
   * Flags every pending row for the drainer, in a write transaction with the relay's timeouts: a
   * row locked by another session fails the start after the lock timeout instead of holding it
   * forever.
   */
  private int parkBacklog(Connection connection) throws SQLException {
    return Sql.inWriteTransaction(
        connection,
        Sql.applicationName(log.relayName()) + "-wal",
        true,
        c -> {
          try (Statement s = c.createStatement()) {
            return s.executeUpdate(WalStatements.parkBacklog(schema));
          }
        });
  }

  /**
   * Sets {@code failover = true} on the slot unless it has it. On a new slot ({@code created}) a
   * failure fails the start; on an existing one it is logged and the start goes on.
   */
  void enableFailover(Connection connection, boolean created, ListenConnectionFactory replication)
      throws SQLException {
    try (PreparedStatement ps = connection.prepareStatement(WalStatements.SLOT_FAILOVER)) {
      ps.setString(1, slotName);
      try (ResultSet rs = ps.executeQuery()) {
        if (rs.next() && rs.getBoolean(1)) {
          return;
        }
      }
    }
    try (Connection stream = replication.open();
        Statement s = stream.createStatement()) {
      s.execute("ALTER_REPLICATION_SLOT " + slotName + " (FAILOVER true)");
      log.info("Replication slot {} is a failover slot (failover = true)", slotName);
    } catch (SQLException e) {
      if (created) {
        // No reader attached yet (the creation lock is held): dropped, so that the next start
        // creates it again rather than a slot that would not survive a fail-over.
        String kept = "it was dropped";
        try (PreparedStatement drop = connection.prepareStatement(WalStatements.DROP_SLOT)) {
          drop.setString(1, slotName);
          drop.execute();
        } catch (SQLException dropFailed) {
          e.addSuppressed(dropFailed);
          kept =
              "it could not be dropped: drop it (SELECT pg_drop_replication_slot('"
                  + slotName
                  + "'))";
        }
        throw new OutboxException(
            "pgoutbox-relay["
                + log.relayName()
                + "] - could not make the new replication slot "
                + slotName
                + " a failover slot ("
                + e.getMessage()
                + "); "
                + kept
                + ". The relay's role needs REPLICATION; or turn failoverSlot off",
            e);
      }
      log.warn(
          "Could not make replication slot {} a failover slot ({}); the next start tries again",
          slotName,
          e.getMessage());
    }
  }
}

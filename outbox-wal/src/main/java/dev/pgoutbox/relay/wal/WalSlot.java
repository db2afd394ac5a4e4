package dev.pgoutbox.relay.wal;

import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.core.internal.SearchPath;
import dev.pgoutbox.relay.ListenConnectionFactory;
import dev.pgoutbox.relay.WalSlotStats;
import dev.pgoutbox.relay.internal.BatchRunner;
import dev.pgoutbox.relay.internal.RelayLog;
import dev.pgoutbox.relay.internal.Sql;
import dev.pgoutbox.relay.internal.WalSlotQuery;
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
 * The WAL relay's slot and publication: the checks and set-up {@code start()} runs, and the slot's
 * state for metrics and for noticing that it was lost. SQL in {@link WalStatements}.
 */
final class WalSlot {

  private final DataSource dataSource;
  private final String schema;
  private final String slotName;
  private final String publicationName;
  private final RelayLog log;
  private final Duration creationTimeout;
  private volatile boolean pg15 = true;
  private volatile int serverVersion;
  private volatile @Nullable ListenConnectionFactory failoverVia;

  /**
   * The slot {@code slotName} and publication {@code publicationName} of the outbox in schema;
   * creating the slot gives up after {@code creationTimeout}.
   */
  public WalSlot(
      DataSource dataSource,
      String schema,
      String slotName,
      String publicationName,
      RelayLog log,
      Duration creationTimeout) {
    this.dataSource = SearchPath.pinned(dataSource);
    this.schema = schema;
    this.slotName = slotName;
    this.publicationName = publicationName;
    this.log = log;
    this.creationTimeout = creationTimeout;
  }

  /**
   * Creates the slot as a failover slot ({@code failover = true}, PostgreSQL 17 and later), set
   * through a replication connection from {@code replication} ({@code ALTER_REPLICATION_SLOT}): a
   * standby with {@code sync_replication_slots = on} keeps a copy, which the relays resume from
   * once it is promoted. A slot that exists without it gets it at the next start that finds it
   * unread.
   */
  public void failoverVia(ListenConnectionFactory replication) {
    this.failoverVia = replication;
  }

  /** The slot's name. */
  public String slotName() {
    return slotName;
  }

  /** The publication's name. */
  public String publicationName() {
    return publicationName;
  }

  /**
   * Checks {@code wal_level}, creates the publication and the slot when missing and allowed, and
   * parks the backlog when it created the slot.
   *
   * @return the slot's state; {@link WalSlotStats#lost()} when it was invalidated
   * @throws OutboxException naming the setting, grant or SQL that is missing
   */
  public WalSlotStats prepare(boolean create) throws SQLException {
    try (Connection connection = dataSource.getConnection()) {
      connection.setAutoCommit(true);
      checkWalLevel(connection);
      if (failoverVia != null && serverVersion < 170000) {
        throw new OutboxException(
            "pgoutbox-relay["
                + log.relayName()
                + "] - failoverSlot needs PostgreSQL 17 or later (failover slots); this server's"
                + " server_version_num is "
                + serverVersion
                + ": turn failoverSlot off");
      }
      ensurePublication(connection, create);
      WalSlotStats slot = read(connection);
      if (slot != null) {
        if (failoverVia != null && !slot.active()) {
          enableFailover(connection, false);
        }
        return slot;
      }
      if (!create) {
        throw new OutboxException(
            "pgoutbox-relay["
                + log.relayName()
                + "] - replication slot "
                + slotName
                + " does not exist and createSlot is off: run SELECT"
                + " pg_create_logical_replication_slot('"
                + slotName
                + "', 'pgoutput'), then UPDATE "
                + schema
                + ".outbox_events SET parked = true WHERE processed_at IS NULL");
      }
      createSlot(connection);
      WalSlotStats created = read(connection);
      if (created == null) {
        throw new OutboxException("replication slot " + slotName + " vanished after its creation");
      }
      return created;
    }
  }

  /** The slot's state, or null when it does not exist. */
  public @Nullable WalSlotStats read() throws SQLException {
    try (Connection connection = dataSource.getConnection()) {
      return read(connection);
    }
  }

  /**
   * The process id of the WAL sender streaming the slot (its reader's replication connection), or
   * null when none streams it or the slot is gone.
   */
  public @Nullable Integer readerPid() throws SQLException {
    try (Connection connection = dataSource.getConnection()) {
      return readerPid(connection);
    }
  }

  /** As {@link #readerPid()}, on {@code connection} (inside its transaction). */
  @Nullable Integer readerPid(Connection connection) throws SQLException {
    try (PreparedStatement ps = connection.prepareStatement(WalStatements.SLOT_READER_PID)) {
      ps.setString(1, slotName);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return null;
        }
        int pid = rs.getInt(1);
        return rs.wasNull() ? null : pid;
      }
    }
  }

  private @Nullable WalSlotStats read(Connection connection) throws SQLException {
    try (PreparedStatement ps = connection.prepareStatement(WalSlotQuery.statement(schema))) {
      ps.setString(1, slotName);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return null;
        }
        if (!"pgoutput".equals(rs.getString(1)) || !rs.getBoolean(2)) {
          throw new OutboxException(
              "replication slot "
                  + slotName
                  + " exists but is not a pgoutput slot of this database (plugin "
                  + rs.getString(1)
                  + "): give the WAL relay another slotName, or drop it");
        }
        return WalSlotQuery.stats(slotName, rs);
      }
    }
  }

  /**
   * Sets {@code failover = true} on the slot unless it has it. On a new slot ({@code created}) a
   * failure fails the start; on an existing one it is logged and the start goes on.
   */
  private void enableFailover(Connection connection, boolean created) throws SQLException {
    try (PreparedStatement ps = connection.prepareStatement(WalStatements.SLOT_FAILOVER)) {
      ps.setString(1, slotName);
      try (ResultSet rs = ps.executeQuery()) {
        if (rs.next() && rs.getBoolean(1)) {
          return;
        }
      }
    }
    ListenConnectionFactory replication = failoverVia;
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

  private void checkWalLevel(Connection connection) throws SQLException {
    try (Statement s = connection.createStatement();
        ResultSet rs = s.executeQuery(WalStatements.WAL_LEVEL)) {
      rs.next();
      String level = rs.getString(1);
      try (ResultSet version = s.executeQuery(WalStatements.SERVER_VERSION_NUM)) {
        version.next();
        serverVersion = version.getInt(1);
        pg15 = serverVersion >= 150000;
      }
      if (!"logical".equals(level)) {
        throw new OutboxException(
            "pgoutbox-relay["
                + log.relayName()
                + "] - the WAL relay needs wal_level = logical, this server runs with wal_level = "
                + level
                + ": run ALTER SYSTEM SET wal_level = logical (and make sure max_replication_slots"
                + " and max_wal_senders leave one free) and restart PostgreSQL, or use OutboxRelay");
      }
    }
  }

  private void ensurePublication(Connection connection, boolean create) throws SQLException {
    String createSql = WalStatements.createPublication(publicationName, schema);
    if (!exists(connection, WalStatements.PUBLICATION, publicationName)) {
      if (!create) {
        throw new OutboxException(
            "publication "
                + publicationName
                + " does not exist and createSlot is off: run "
                + createSql);
      }
      try (Statement s = connection.createStatement()) {
        s.execute(createSql);
        log.info("Created publication {} (inserts into {}.outbox_events)", publicationName, schema);
      } catch (SQLException e) {
        if ("42710".equals(e.getSQLState())) {
          return; // Another instance created it meanwhile.
        }
        throw new OutboxException(
            "pgoutbox-relay["
                + log.relayName()
                + "] - could not create publication "
                + publicationName
                + " ("
                + e.getMessage()
                + "): run "
                + createSql
                + " as the owner of "
                + schema
                + ".outbox_events",
            e);
      }
    }
    PublicationState state = publicationState(connection);
    if (state == null) {
      throw new OutboxException(
          "publication "
              + publicationName
              + " vanished while the WAL relay started: run "
              + createSql);
    }
    if (state.problem() != null) {
      throw new OutboxException(
          "pgoutbox-relay["
              + log.relayName()
              + "] - "
              + state.problem()
              + "; the WAL relay would never see the events it leaves out, so it does not start");
    }
  }

  /**
   * What the publication streams of the outbox table: its fingerprint, and what is wrong with it
   * (null when it streams every insert whole). Null when the publication does not exist.
   */
  record PublicationState(String fingerprint, @Nullable String problem) {}

  /** {@link PublicationState} of the publication, read now through the pool. */
  @Nullable PublicationState publicationState() throws SQLException {
    try (Connection connection = dataSource.getConnection()) {
      return publicationState(connection);
    }
  }

  private @Nullable PublicationState publicationState(Connection connection) throws SQLException {
    try (PreparedStatement ps =
        connection.prepareStatement(WalStatements.publicationState(schema, pg15))) {
      ps.setString(1, publicationName);
      ps.setString(2, publicationName);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return null;
        }
        String table = schema + ".outbox_events";
        String readd =
            "ALTER PUBLICATION "
                + publicationName
                + " DROP TABLE "
                + table
                + "; ALTER PUBLICATION "
                + publicationName
                + " ADD TABLE "
                + table;
        String problem = null;
        if (!rs.getBoolean(2)) {
          problem =
              "publication "
                  + publicationName
                  + " does not include "
                  + table
                  + ": run ALTER PUBLICATION "
                  + publicationName
                  + " ADD TABLE "
                  + table
                  + ", or give the WAL relay another publicationName";
        } else if (!rs.getBoolean(1)) {
          problem =
              "publication "
                  + publicationName
                  + " does not publish inserts: run ALTER PUBLICATION "
                  + publicationName
                  + " SET (publish = 'insert')";
        } else if (rs.getString(3) != null) {
          problem =
              "publication "
                  + publicationName
                  + " filters the rows of "
                  + table
                  + " (WHERE "
                  + rs.getString(3)
                  + "): run "
                  + readd
                  + " (without a WHERE clause)";
        } else if (!rs.getString(4).isEmpty()) {
          problem =
              "publication "
                  + publicationName
                  + " leaves columns of "
                  + table
                  + " out ("
                  + rs.getString(4)
                  + "): run "
                  + readd
                  + " (without a column list)";
        }
        return new PublicationState(rs.getString(5), problem);
      }
    }
  }

  /**
   * When the publication may have changed since the slot's restart point ({@link
   * WalStatements#publicationChangedSinceSlot}), parks every pending row not parked yet, in {@code
   * connection}'s transaction, and answers how many; else 0 and -1 when it did not change. A reader
   * that attaches does so before it streams: inserts written while the publication did not publish
   * them (while no reader streamed, the publication restored since) are not in the slot, and its
   * baseline, read now, cannot tell; parked, the table relay publishes them before the later events
   * of their aggregates.
   */
  int parkIfPublicationChanged(Connection connection) throws SQLException {
    boolean changed;
    try (PreparedStatement ps =
        connection.prepareStatement(WalStatements.publicationChangedSinceSlot(schema, pg15))) {
      ps.setString(1, publicationName);
      ps.setString(2, slotName);
      try (ResultSet rs = ps.executeQuery()) {
        changed = rs.next() && rs.getBoolean(1);
      }
    }
    if (!changed) {
      return -1;
    }
    try (Statement s = connection.createStatement()) {
      return s.executeUpdate(WalStatements.parkBacklog(schema));
    }
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
  private boolean createSlot(Connection connection) throws SQLException {
    try (Connection lock = dataSource.getConnection()) {
      lock.setAutoCommit(false);
      boolean committed = false;
      try {
        holdCreationLock(lock);
        if (read(connection) != null) {
          return false; // Made, backlog parked, by another instance while this one waited.
        }
        createAndPark(connection);
        if (failoverVia != null) {
          enableFailover(connection, true); // before any reader may attach: under the lock
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
   * Takes the parking fence ({@link WalStatements#parkingFence}) in {@code connection}'s
   * transaction, shared or exclusively.
   */
  void fence(Connection connection, boolean exclusive) throws SQLException {
    try (PreparedStatement ps =
        connection.prepareStatement(WalStatements.parkingFence(exclusive))) {
      ps.setString(1, slotName);
      ps.execute();
    }
  }

  /**
   * Drops the slot, ending the WAL sender that streams it first (a reader of another instance that
   * attached meanwhile), trying until {@code within} has passed.
   *
   * @return null when the slot is gone, else why it could not be dropped
   */
  @Nullable String dropStreamedOrNot(Duration within) {
    long deadline = System.nanoTime() + within.toNanos();
    String why = "not tried";
    do {
      try (Connection connection = dataSource.getConnection()) {
        connection.setAutoCommit(true);
        try (PreparedStatement terminate =
            connection.prepareStatement(WalStatements.TERMINATE_SLOT_READER)) {
          terminate.setString(1, slotName);
          terminate.execute();
        }
        try (PreparedStatement drop = connection.prepareStatement(WalStatements.DROP_SLOT)) {
          drop.setString(1, slotName);
          drop.execute();
          return null;
        }
      } catch (SQLException e) {
        if ("42704".equals(e.getSQLState())) {
          return null; // Already gone.
        }
        why = e.getMessage();
      }
      try {
        Thread.sleep(100); // A terminated WAL sender takes a moment to release the slot.
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return why + " (interrupted)";
      }
    } while (System.nanoTime() - deadline < 0);
    return why;
  }

  private static boolean exists(Connection connection, String sql, String... binds)
      throws SQLException {
    try (PreparedStatement ps = connection.prepareStatement(sql)) {
      for (int i = 0; i < binds.length; i++) {
        ps.setString(i + 1, binds[i]);
      }
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
  }

  /** The WAL inserted so far, as a {@code bigint}. */
  public long walInserted() throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(WalStatements.WAL_INSERTED_AND_FLUSHED)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /**
   * For an instance that fell back at WAL position {@code fellBackAt}: what its drainer may claim
   * in the transaction of {@code connection} ({@link WalStatements#FALL_BACK_GUARD}).
   */
  public BatchRunner.FallBackDecision afterFallBack(Connection connection, long fellBackAt)
      throws SQLException {
    try (PreparedStatement ps = connection.prepareStatement(WalStatements.FALL_BACK_GUARD)) {
      ps.setString(1, slotName);
      ps.setString(2, slotName);
      ps.setLong(3, fellBackAt);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        if (!rs.getBoolean(1)) {
          return BatchRunner.FallBackDecision.CLAIM_NOTHING;
        }
        return rs.getBoolean(2)
            ? BatchRunner.FallBackDecision.PARKED_ONLY
            : BatchRunner.FallBackDecision.CLAIM_ALL;
      }
    }
  }
}

package dev.pgoutbox.relay.wal;

import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.core.internal.SearchPath;
import dev.pgoutbox.relay.ListenConnectionFactory;
import dev.pgoutbox.relay.WalSlotStats;
import dev.pgoutbox.relay.internal.FallBackGuard;
import dev.pgoutbox.relay.internal.RelayLog;
import dev.pgoutbox.relay.internal.WalSlotQuery;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
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
  private final WalSlotCreation creation;
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
    this.creation = new WalSlotCreation(this, this.dataSource, schema, log, creationTimeout);
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
        ListenConnectionFactory via = failoverVia;
        if (via != null && !slot.active()) {
          creation.enableFailover(connection, false, via);
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
      creation.create(connection, failoverVia);
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

  /** As {@link #read()}, on {@code connection}. */
  @Nullable WalSlotStats read(Connection connection) throws SQLException {
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
  public FallBackGuard.Decision afterFallBack(Connection connection, long fellBackAt)
      throws SQLException {
    try (PreparedStatement ps = connection.prepareStatement(WalStatements.FALL_BACK_GUARD)) {
      ps.setString(1, slotName);
      ps.setString(2, slotName);
      ps.setLong(3, fellBackAt);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        if (!rs.getBoolean(1)) {
          return FallBackGuard.Decision.CLAIM_NOTHING;
        }
        return rs.getBoolean(2)
            ? FallBackGuard.Decision.PARKED_ONLY
            : FallBackGuard.Decision.CLAIM_ALL;
      }
    }
  }
}

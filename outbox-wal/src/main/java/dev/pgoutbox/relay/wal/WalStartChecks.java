package dev.pgoutbox.relay.wal;

import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.WalSlotStats;
import dev.pgoutbox.relay.internal.FleetRegistry;
import dev.pgoutbox.relay.internal.RelayLog;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.jooq.exception.DataAccessException;

/**
 * The WAL relay's start up to reading: its registration in the relay registry, the message
 * transport's guard and the slot's preparation, each refusal leaving the registry.
 */
final class WalStartChecks {

  private final FleetRegistry fleet;
  private final DataSource dataSource;
  private final String name;
  private final String schema;
  private final RelayLog log;

  /** The start of relay {@code name}, which reads slot {@code slotName}. */
  WalStartChecks(
      DataSource dataSource,
      String name,
      String schema,
      RelayConfig config,
      String slotName,
      RelayLog log) {
    this.fleet =
        new FleetRegistry(
            dataSource,
            OutboxSchema.jooqSettings(schema),
            schema,
            name,
            config.ordering(),
            config.deadLetterPolicy(),
            FleetRegistry.walSource(slotName));
    this.dataSource = dataSource;
    this.name = name;
    this.schema = schema;
    this.log = log;
  }

  /** The relay's entry in the relay registry. */
  FleetRegistry fleet() {
    return fleet;
  }

  /** Registers in the relay registry; an {@link OutboxException} says why it could not. */
  void register() {
    try {
      fleet.register();
    } catch (DataAccessException e) {
      throw new OutboxException(
          "pgoutbox-relay["
              + name
              + "] - could not register in the relay registry: "
              + e.getMessage(),
          e);
    }
  }

  /** The message transport's guard ({@link EmitMessageGuard}); deregisters before it throws. */
  void requireMessagesSafe() {
    String problem;
    try {
      problem = EmitMessageGuard.problem(dataSource);
    } catch (SQLException e) {
      deregisterQuietly();
      throw new OutboxException(
          "pgoutbox-relay["
              + name
              + "] - could not check pg_logical_emit_message's privileges: "
              + e.getMessage(),
          e);
    }
    if (problem != null) {
      deregisterQuietly();
      throw new OutboxException(
          "pgoutbox-relay[" + name + "] - refused to start with transport MESSAGES: " + problem);
    }
  }

  /** {@link WalSlot#prepare}; deregisters before it throws. */
  WalSlotStats prepare(WalSlot slot, boolean createSlot) {
    try {
      return slot.prepare(createSlot);
    } catch (RuntimeException e) {
      deregisterQuietly();
      throw e;
    } catch (SQLException e) {
      deregisterQuietly();
      throw prepareFailure(e);
    }
  }

  private OutboxException prepareFailure(SQLException e) {
    String state = e.getSQLState();
    if ("42P01".equals(state) || "42703".equals(state)) {
      return new OutboxException(
          "pgoutbox-relay["
              + name
              + "] - "
              + schema
              + ".outbox_events lacks the WAL relay's column: run OutboxSchema.migrate(dataSource,"
              + " \""
              + schema
              + "\") to apply migration V5",
          e);
    }
    return new OutboxException(
        "pgoutbox-relay[" + name + "] - could not prepare the WAL relay: " + e.getMessage(), e);
  }

  /** Leaves the relay registry; a failure is logged, the entry expires by itself. */
  void deregisterQuietly() {
    try {
      fleet.deregister();
    } catch (RuntimeException e) {
      log.warn(
          "Could not leave the relay registry ({}); the entry expires by itself", e.toString());
    }
  }
}

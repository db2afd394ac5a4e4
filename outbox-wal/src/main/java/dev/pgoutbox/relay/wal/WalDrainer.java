package dev.pgoutbox.relay.wal;

import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.PublishTracing;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.RelayListener;
import dev.pgoutbox.relay.internal.BatchRunner;
import dev.pgoutbox.relay.internal.FallBackGuard;
import dev.pgoutbox.relay.internal.RelayLog;
import dev.pgoutbox.relay.internal.RelayLoop;
import java.sql.SQLException;
import java.util.concurrent.ScheduledExecutorService;
import javax.sql.DataSource;

/**
 * The WAL relay's drainer (its table relay, which publishes the parked events), and its fall-back
 * to every pending event once the slot is lost, until the drainer's guard notices a new slot.
 */
final class WalDrainer {

  private final BatchRunner drainerRunner;
  private final WalSlot slot;
  private final String schema;
  private final RelayConfig config;
  private final RelayListener listener;
  private final RelayLog log;
  private volatile boolean fallenBack;

  /** The drainer of the relay reading {@code slot}; it claims parked events only. */
  WalDrainer(
      DataSource dataSource,
      String schema,
      Publisher publisher,
      PublishTracing tracing,
      RelayConfig config,
      RelayListener listener,
      RelayLog log,
      WalSlot slot) {
    this.slot = slot;
    this.schema = schema;
    this.config = config;
    this.listener = listener;
    this.log = log;
    this.drainerRunner =
        new BatchRunner(
            dataSource,
            schema,
            OutboxSchema.jooqSettings(schema),
            publisher,
            tracing,
            config,
            listener,
            log);
    this.drainerRunner.parkedOnly(true);
  }

  /** The drainer's loop on {@code exec}, not started. */
  RelayLoop newLoop(ScheduledExecutorService exec) {
    return new RelayLoop(
        exec,
        drainerRunner,
        null,
        config.batchSize(),
        config.pollInterval(),
        config.errorBackoffMax(),
        listener,
        log);
  }

  /** Whether the relay fell back and has not resumed. */
  boolean fallenBack() {
    return fallenBack;
  }

  /** The WAL inserted so far, or {@link Long#MAX_VALUE} (a new slot is never followed). */
  long walInsertedOrNever() {
    try {
      return slot.walInserted();
    } catch (SQLException e) {
      log.warn(
          "Could not read the WAL position ({}): this instance keeps claiming every pending event"
              + " until it is restarted, even once a new slot exists",
          e.toString());
      return Long.MAX_VALUE;
    }
  }

  /**
   * Falls back to claiming every pending row; {@code since}: the WAL position read before the slot
   * was last found unusable. The drainer calls {@code resumed} once a new slot exists.
   */
  void fallBack(String reason, long since, Runnable resumed) {
    fallenBack = true;
    // A slot created from `since` on (another instance's start, after the slot is dropped) has a
    // reader that publishes the rows it does not park: from then on this instance's drainer claims
    // parked rows only again, and it stands by to read the slot (see docs/wal-relay.md).
    drainerRunner.fallBackGuard(
        new FallBackGuard() {
          @Override
          public FallBackGuard.Decision decide(java.sql.Connection connection) throws SQLException {
            return slot.afterFallBack(connection, since);
          }

          @Override
          public void resumed() {
            resumed.run();
          }
        });
    drainerRunner.parkedOnly(false);
    listener.onWalFallBack(slot.slotName(), reason);
    log.error(
        "WAL RELAY FALLING BACK TO THE TABLE RELAY: {}. Every pending event stays in {}.outbox_events"
            + " and this instance's table relay publishes all of them from now on (events the"
            + " reader published but had not completed yet go out again). To return to WAL mode,"
            + " stop every instance, drop the slot if it still exists (SELECT"
            + " pg_drop_replication_slot('{}')), and start them again; consider raising"
            + " max_slot_wal_keep_size",
        reason,
        schema,
        slot.slotName());
  }

  /**
   * A new slot of the name exists: back to the parking rule; false when the relay had not fallen
   * back. The caller then starts a reader that stands by.
   */
  boolean resume() {
    if (!fallenBack) {
      return false;
    }
    fallenBack = false;
    log.warn(
        "Replication slot {} exists again (created by another instance's start): this instance"
            + " claims parked events only again and stands by to read the slot",
        slot.slotName());
    listener.onWalResumed(slot.slotName());
    return true;
  }
}

package dev.pgoutbox.relay.wal;

import dev.pgoutbox.relay.RelayListener;
import dev.pgoutbox.relay.WalSlotStats;
import dev.pgoutbox.relay.internal.FleetRegistry;
import dev.pgoutbox.relay.internal.RelayLog;
import dev.pgoutbox.relay.internal.StatsReader;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * The WAL relay's own pool and periodic tasks: its heartbeat in the registry, the stats refresh.
 */
final class WalRelayTasks {

  private final FleetRegistry fleet;
  private final StatsReader stats;
  private final WalSlot slot;
  private final RelayListener listener;
  private final RelayLog log;
  private final Duration statsEvery;
  private final Runnable stop;
  private @Nullable ScheduledFuture<?> statsTask;
  private @Nullable ScheduledFuture<?> heartbeatTask;

  /**
   * The tasks of a relay registered in {@code fleet}; {@code stop} stops the relay when its
   * registration was taken over.
   */
  WalRelayTasks(
      FleetRegistry fleet,
      StatsReader stats,
      WalSlot slot,
      RelayListener listener,
      RelayLog log,
      Duration statsEvery,
      Runnable stop) {
    this.fleet = fleet;
    this.stats = stats;
    this.slot = slot;
    this.listener = listener;
    this.log = log;
    this.statsEvery = statsEvery;
    this.stop = stop;
  }

  /** The executor the relay creates when the host gives none: {@link WalRelay#OWN_THREADS}. */
  static ScheduledExecutorService ownPool(String name) {
    return Executors.newScheduledThreadPool(
        WalRelay.OWN_THREADS,
        Thread.ofPlatform().name("pgoutbox-wal-relay-" + name + "-", 0).daemon(true).factory());
  }

  /** Schedules the heartbeat and the stats refresh on {@code exec}. */
  void start(ScheduledExecutorService exec) {
    heartbeatTask =
        exec.scheduleWithFixedDelay(
            this::heartbeat,
            FleetRegistry.HEARTBEAT_EVERY.toMillis(),
            FleetRegistry.HEARTBEAT_EVERY.toMillis(),
            TimeUnit.MILLISECONDS);
    statsTask =
        exec.scheduleWithFixedDelay(
            this::refreshStats, 0, statsEvery.toMillis(), TimeUnit.MILLISECONDS);
  }

  /** Cancels both, letting a run in flight finish. */
  void cancel() {
    if (statsTask != null) {
      statsTask.cancel(false);
    }
    if (heartbeatTask != null) {
      heartbeatTask.cancel(false);
    }
  }

  private void heartbeat() {
    if (fleet.heartbeat(log, stop)) {
      listener.onHeartbeat();
    }
  }

  private void refreshStats() {
    try {
      listener.onStats(stats.stats());
      WalSlotStats state = slot.read();
      if (state != null) {
        listener.onWalSlot(state);
      }
    } catch (SQLException | RuntimeException e) {
      log.warn("Stats refresh failed: {}", e.toString());
    }
  }
}

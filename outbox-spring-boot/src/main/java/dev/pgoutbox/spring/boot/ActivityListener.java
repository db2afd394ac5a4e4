package dev.pgoutbox.spring.boot;

import dev.pgoutbox.relay.RelayListener;
import java.time.Clock;
import java.time.Duration;

/** Counts what a relay does, for {@link OutboxRelayLifecycle#activity()}. */
final class ActivityListener implements RelayListener {

  private final Clock clock;
  private RelayActivity activity = RelayActivity.NONE;

  ActivityListener(Clock clock) {
    this.clock = clock;
  }

  @Override
  public synchronized void onBatch(BatchReport report) {
    activity =
        new RelayActivity(
            activity.published() + report.published(),
            activity.retried() + report.retried(),
            activity.deadLettered() + report.deadLettered(),
            clock.instant(),
            activity.lastDatabaseError(),
            activity.lastDatabaseErrorAt());
  }

  @Override
  public synchronized void onDatabaseError(Exception error, Duration backoff) {
    activity =
        new RelayActivity(
            activity.published(),
            activity.retried(),
            activity.deadLettered(),
            activity.lastBatchAt(),
            error.toString(),
            clock.instant());
  }

  synchronized RelayActivity snapshot() {
    return activity;
  }
}

package dev.pgoutbox.relay.internal;

import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.OutboxStats;
import dev.pgoutbox.relay.RelayListener;
import dev.pgoutbox.relay.WalSlotStats;
import java.time.Duration;

/**
 * Keeps a throwing listener from disturbing a relay: each call's exception is logged, not thrown.
 */
public record SafeListener(RelayListener delegate, RelayLog log) implements RelayListener {
  @Override
  public void onBatch(BatchReport report) {
    guard(() -> delegate.onBatch(report));
  }

  @Override
  public void onPublished(OutboxMessage message, Duration lag) {
    guard(() -> delegate.onPublished(message, lag));
  }

  @Override
  public void onFailed(EventFailure failure) {
    guard(() -> delegate.onFailed(failure));
  }

  @Override
  public void onOrderViolation(OutboxMessage message) {
    guard(() -> delegate.onOrderViolation(message));
  }

  @Override
  public void onRecordShortfall(int expected, int recorded) {
    guard(() -> delegate.onRecordShortfall(expected, recorded));
  }

  @Override
  public void onDatabaseError(Exception error, Duration backoff) {
    guard(() -> delegate.onDatabaseError(error, backoff));
  }

  @Override
  public void onStats(OutboxStats stats) {
    guard(() -> delegate.onStats(stats));
  }

  @Override
  public void onWalSlot(WalSlotStats slot) {
    guard(() -> delegate.onWalSlot(slot));
  }

  @Override
  public void onHeartbeat() {
    guard(delegate::onHeartbeat);
  }

  @Override
  public void onWalFallBack(String slotName, String reason) {
    guard(() -> delegate.onWalFallBack(slotName, reason));
  }

  @Override
  public void onWalResumed(String slotName) {
    guard(() -> delegate.onWalResumed(slotName));
  }

  private void guard(Runnable call) {
    try {
      call.run();
    } catch (RuntimeException e) {
      log.warn("RelayListener {} threw {}", delegate.getClass().getName(), e.toString());
    }
  }
}

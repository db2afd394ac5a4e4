package dev.pgoutbox.relay;

import java.time.Duration;
import java.util.List;

/**
 * Hears what a relay does, for metrics and tests. Every method has a no-op default; implement the
 * ones you need. Methods are called on the relay's thread after the batch's transaction committed
 * (events reported published really are marked), so keep them quick and never throw.
 *
 * <p>{@code MicrometerRelayMetrics} (package {@code dev.pgoutbox.relay.micrometer}) is the
 * implementation behind the relay's metrics.
 */
public interface RelayListener {

  /** A listener that does nothing. */
  RelayListener NONE = new RelayListener() {};

  /** One batch committed: what was claimed and what became of it. */
  default void onBatch(BatchReport report) {}

  /**
   * An event was published and marked.
   *
   * @param lag from the event's {@code created_at} to the relay's clock at commit
   */
  default void onPublished(OutboxMessage message, Duration lag) {}

  /** An event failed to publish and was scheduled for retry or dead-lettered. */
  default void onFailed(EventFailure failure) {}

  /**
   * The publisher reported {@code message} published although an earlier event of its aggregate in
   * the same batch failed or went unanswered: per-aggregate order was broken by the publisher (a
   * custom one, or a bug). The event is marked published so it is not sent twice; the relay also
   * logs it at ERROR.
   */
  default void onOrderViolation(OutboxMessage message) {}

  /**
   * Recording a batch touched fewer rows than the relay held: {@code expected} outcomes to record,
   * {@code recorded} rows changed. The claim locks every row it hands out, so this means a row was
   * changed behind the relay's back; the relay also logs it at ERROR.
   */
  default void onRecordShortfall(int expected, int recorded) {}

  /** The relay hit a database error and backs off before trying again. */
  default void onDatabaseError(Exception error, Duration backoff) {}

  /** Fresh figures from the database, every {@link RelayConfig#metricsRefreshInterval()}. */
  default void onStats(OutboxStats stats) {}

  /** A {@code WalRelay}'s slot, read every {@code metricsRefreshInterval} (lag in bytes). */
  default void onWalSlot(WalSlotStats slot) {}

  /**
   * The relay refreshed its row in the relay registry ({@code outbox_relays}), every 5 s while it
   * runs and reaches the database. Other relays and {@code OutboxAdmin.relays()} (pgoutbox-admin)
   * count it alive until 30 s after the last one.
   */
  default void onHeartbeat() {}

  /**
   * A {@code WalRelay} stopped reading its slot and publishes every pending event through its table
   * relay from now on: the slot was dropped or invalidated, its publication stopped streaming the
   * outbox's inserts whole, or its confirmed position was moved past pending events (then the relay
   * drops the slot, whose stream skipped events). Called once per fall-back; {@code reason} says
   * what happened. See docs/wal-relay.md.
   */
  default void onWalFallBack(String slotName, String reason) {}

  /**
   * A {@code WalRelay} that had fallen back ({@link #onWalFallBack}) found a new slot of its name,
   * created by another instance's start: it claims only parked events again and stands by to read
   * the slot. Called once per return. See docs/wal-relay.md.
   */
  default void onWalResumed(String slotName) {}

  /** A listener that calls each of {@code listeners} in turn. */
  static RelayListener composite(List<RelayListener> listeners) {
    List<RelayListener> all = List.copyOf(listeners);
    return new RelayListener() {
      @Override
      public void onBatch(BatchReport report) {
        all.forEach(l -> l.onBatch(report));
      }

      @Override
      public void onPublished(OutboxMessage message, Duration lag) {
        all.forEach(l -> l.onPublished(message, lag));
      }

      @Override
      public void onFailed(EventFailure failure) {
        all.forEach(l -> l.onFailed(failure));
      }

      @Override
      public void onOrderViolation(OutboxMessage message) {
        all.forEach(l -> l.onOrderViolation(message));
      }

      @Override
      public void onRecordShortfall(int expected, int recorded) {
        all.forEach(l -> l.onRecordShortfall(expected, recorded));
      }

      @Override
      public void onDatabaseError(Exception error, Duration backoff) {
        all.forEach(l -> l.onDatabaseError(error, backoff));
      }

      @Override
      public void onStats(OutboxStats stats) {
        all.forEach(l -> l.onStats(stats));
      }

      @Override
      public void onWalSlot(WalSlotStats slot) {
        all.forEach(l -> l.onWalSlot(slot));
      }

      @Override
      public void onHeartbeat() {
        all.forEach(RelayListener::onHeartbeat);
      }

      @Override
      public void onWalFallBack(String slotName, String reason) {
        all.forEach(l -> l.onWalFallBack(slotName, reason));
      }

      @Override
      public void onWalResumed(String slotName) {
        all.forEach(l -> l.onWalResumed(slotName));
      }
    };
  }

  /**
   * What one batch came to.
   *
   * @param claimed events claimed (and handed to the publisher, unless held back)
   * @param published events published and marked
   * @param retried events that failed and will be retried after their backoff
   * @param deadLettered events dead-lettered (attempts exhausted, permanent failure, unusable row)
   * @param heldBack events left pending untouched because an earlier event of their aggregate
   *     failed in the same batch (strict ordering)
   * @param duration claim to commit
   */
  record BatchReport(
      int claimed, int published, int retried, int deadLettered, int heldBack, Duration duration) {}

  /**
   * One failed event.
   *
   * @param message the event
   * @param reason stored in {@code last_error}
   * @param attempts failed attempts so far, this one included
   * @param dead whether the event was dead-lettered
   * @param retryIn the backoff before the next attempt; zero when dead
   */
  record EventFailure(
      OutboxMessage message, String reason, int attempts, boolean dead, Duration retryIn) {}
}

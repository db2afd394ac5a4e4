package dev.pgoutbox.spring.boot;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.RelayListener;
import java.time.Clock;
import java.time.Duration;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.springframework.context.SmartLifecycle;

/**
 * Runs the relay with the application context: started once the context is refreshed (last phase,
 * after every other bean), stopped first on shutdown, letting the batch in flight finish within
 * {@code pgoutbox.relay.shutdown-timeout} or rolling it back (its events stay pending).
 *
 * <p>A stopped {@link OutboxRelay} cannot start again, so each {@link #start()} builds a new one,
 * handing the builder a listener that counts what the relay does ({@link #activity()}).
 * Thread-safe.
 */
public final class OutboxRelayLifecycle implements SmartLifecycle {

  /** The phase: the highest, so the relay starts last and stops first. */
  public static final int PHASE = SmartLifecycle.DEFAULT_PHASE;

  private final Function<RelayListener, OutboxRelay> relays;
  private final Duration shutdownTimeout;
  private @Nullable OutboxRelay relay;
  private @Nullable ActivityListener activity;

  /**
   * A lifecycle that builds its relay with {@code relays} at each start.
   *
   * @param relays builds a relay that reports to the listener it is given (besides any others)
   * @param shutdownTimeout how long {@link #stop()} waits for the batch in flight
   */
  public OutboxRelayLifecycle(
      Function<RelayListener, OutboxRelay> relays, Duration shutdownTimeout) {
    this.relays = requireNonNull(relays, "relays must not be null");
    this.shutdownTimeout = requireNonNull(shutdownTimeout, "shutdownTimeout must not be null");
  }

  @Override
  public synchronized void start() {
    if (relay != null && relay.isRunning()) {
      return;
    }
    ActivityListener counting = new ActivityListener(Clock.systemUTC());
    OutboxRelay next = relays.apply(counting);
    next.start();
    relay = next;
    activity = counting;
  }

  @Override
  public void stop() {
    OutboxRelay current;
    synchronized (this) {
      current = relay;
    }
    if (current != null) {
      current.stop(shutdownTimeout);
    }
  }

  @Override
  public synchronized boolean isRunning() {
    return relay != null && relay.isRunning();
  }

  @Override
  public int getPhase() {
    return PHASE;
  }

  /** The relay of the last start, or null before the first. */
  public synchronized @Nullable OutboxRelay relay() {
    return relay;
  }

  /** What the relay of the last start did; {@link RelayActivity#NONE} before the first. */
  public synchronized RelayActivity activity() {
    return activity == null ? RelayActivity.NONE : activity.snapshot();
  }
}

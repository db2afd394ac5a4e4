package dev.pgoutbox.relay;

import dev.pgoutbox.relay.testing.TestWalRelays;
import dev.pgoutbox.relay.wal.WalRelay;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The WAL relays one test builds, each on a slot of its own: built the one way the WAL relay tests
 * share ({@link TestWalRelays}, an executor of their own), then stopped, their executors shut down
 * and their slots dropped after the test. Registered as an extension of the test instance:
 * {@code @RegisterExtension final WalTestRelays relays = new WalTestRelays(db);}.
 */
final class WalTestRelays implements AfterEachCallback {

  private final TestSchema db;
  private final List<WalRelay> relays = new ArrayList<>();
  private final List<ScheduledExecutorService> executors = new ArrayList<>();
  private final List<String> slots = new ArrayList<>();

  WalTestRelays(TestSchema db) {
    this.db = db;
  }

  /** The tests' relay settings: small batches, fast polls, a short flat back-off, many attempts. */
  static RelayConfig.Builder config() {
    return RelayConfig.builder()
        .batchSize(100)
        .pollInterval(Duration.ofMillis(50))
        .maxAttempts(1_000)
        .publishTimeout(Duration.ofSeconds(10))
        .exponentialBackoff(Duration.ofMillis(50), 1.0, 0.0, Duration.ofMillis(50));
  }

  /** A scheduler of three daemon threads, shut down after the test. */
  ScheduledExecutorService executor() {
    ScheduledExecutorService executor =
        Executors.newScheduledThreadPool(3, Thread.ofPlatform().daemon(true).factory());
    executors.add(executor);
    return executor;
  }

  WalRelay relay(String slot, Publisher publisher, RelayConfig config) {
    return relay(slot, publisher, config, executor());
  }

  WalRelay relay(String slot, Publisher publisher, RelayConfig config, RelayListener listener) {
    return relay(slot, publisher, config, executor(), listener);
  }

  WalRelay relay(
      String slot, Publisher publisher, RelayConfig config, ScheduledExecutorService executor) {
    return relay(slot, publisher, config, executor, RelayListener.NONE);
  }

  /** A relay on {@code slot}, not started, stopped after the test; the slot dropped then. */
  WalRelay relay(
      String slot,
      Publisher publisher,
      RelayConfig config,
      ScheduledExecutorService executor,
      RelayListener listener) {
    dropAfterwards(slot);
    return stopAfterwards(
        TestWalRelays.builder(db, slot, publisher)
            .config(config)
            .executor(executor)
            .listener(listener)
            .build());
  }

  /** Drops {@code slot} after the test. */
  void dropAfterwards(String slot) {
    if (!slots.contains(slot)) {
      slots.add(slot);
    }
  }

  /** Stops {@code relay} after the test; returns it. */
  WalRelay stopAfterwards(WalRelay relay) {
    relays.add(relay);
    return relay;
  }

  @Override
  public void afterEach(ExtensionContext context) {
    stopAllAndDropSlots();
  }

  /** Stops every relay, shuts every executor down and drops every slot. */
  void stopAllAndDropSlots() {
    relays.forEach(r -> r.stop(Duration.ofSeconds(2)));
    executors.forEach(ScheduledExecutorService::shutdownNow);
    for (String slot : slots) {
      Eventually.await("slot " + slot + " dropped", () -> db.dropReplicationSlot(slot));
    }
  }
}

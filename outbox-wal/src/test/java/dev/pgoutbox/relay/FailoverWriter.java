package dev.pgoutbox.relay;

import static dev.pgoutbox.relay.testing.EventRows.event;

import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.relay.testing.TestWalRelays;
import dev.pgoutbox.relay.wal.WalRelay;
import dev.pgoutbox.testing.DeliveryChecker;
import dev.pgoutbox.testing.TestSchema;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;

/**
 * Writes one transaction after another, each one event for every aggregate with the next seq; a
 * transaction that fails (the primary is gone) is written again with the same seqs, so a commit
 * whose answer was lost shows as a duplicate, never as a gap. Paced so the checker's figures stay
 * small. Shared by the fail-over tests, with the relay they build and how they close their servers.
 */
final class FailoverWriter {
  private static final int AGGREGATES = 5;
  private final TestSchema db;
  final Map<String, Integer> written = new ConcurrentHashMap<>();
  final AtomicInteger rounds = new AtomicInteger();
  final AtomicInteger failures = new AtomicInteger();
  private volatile boolean stopped;
  final Thread thread = Thread.ofPlatform().name("failover-writer").unstarted(this::write);

  FailoverWriter(TestSchema db) {
    this.db = db;
  }

  /**
   * The fail-over tests' relay on slot {@code failover}: batches of 100, polls every 50 ms, a
   * back-off of at most 500 ms, and the reason of every fall-back added to {@code fallBacks}.
   */
  static WalRelay.Builder relay(TestSchema db, Publisher publisher, List<String> fallBacks) {
    return TestWalRelays.builder(db, "failover", publisher)
        .config(
            RelayConfig.builder()
                .batchSize(100)
                .pollInterval(Duration.ofMillis(50))
                .errorBackoffMax(Duration.ofMillis(500))
                .build())
        .listener(WalTestSupport.fallBacksInto(fallBacks));
  }

  /** Closes {@code servers} in order, passing over those never started (null). */
  static void closeAll(@Nullable AutoCloseable... servers) throws Exception {
    for (AutoCloseable server : servers) {
      if (server != null) {
        server.close();
      }
    }
  }

  /**
   * What {@code publisher} delivered checked against what this writer wrote, logged to {@code log}
   * with the writer's figures under {@code what}.
   */
  DeliveryChecker.Verdict check(RecordingPublisher publisher, Logger log, String what) {
    DeliveryChecker.Verdict verdict = DeliveryChecker.check(written, publisher.deliveredPayloads());
    log.info(
        "{}: {} written transactions ({} failed and retried), {}",
        what,
        rounds.get(),
        failures.get(),
        verdict);
    return verdict;
  }

  private void write() {
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    int seq = 1;
    while (!stopped) {
      List<OutboxEvent> events = new ArrayList<>();
      for (int a = 0; a < AGGREGATES; a++) {
        events.add(event("agg-" + a, seq));
      }
      try {
        db.dsl().transaction(tx -> outbox.appendAll(tx.dsl(), events));
      } catch (RuntimeException e) {
        failures.incrementAndGet();
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100)); // pace the retries
        continue;
      }
      for (int a = 0; a < AGGREGATES; a++) {
        written.put("agg-" + a, seq);
      }
      seq++;
      rounds.incrementAndGet();
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10)); // pace: about 100 per second
    }
  }

  void stop() throws InterruptedException {
    stopped = true;
    if (thread.isAlive()) {
      thread.join(TimeUnit.SECONDS.toMillis(60));
    }
  }
}

package dev.pgoutbox.tools.bench;

import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Writers that commit one-event transactions through the real {@link Outbox} at a steady total
 * rate, each on its own connection and its own aggregates ({@code w<writer>-agg-<n>}), so that an
 * aggregate's seq rises in commit order. Used by {@code bench latency} and {@code bench soak}.
 */
final class PacedWriters {

  /** Hears each commit, on the writer's thread, right after it returned. */
  @FunctionalInterface
  interface CommitListener {
    void committed(UUID id, long nanos);
  }

  private final ExecutorService threads;
  private final List<Future<Map<String, Integer>>> futures = new ArrayList<>();
  private final AtomicLong committed = new AtomicLong();

  private PacedWriters(int writers) {
    this.threads = Executors.newFixedThreadPool(writers);
  }

  /**
   * Starts {@code writers} writers committing {@code rate} events/s in all from {@code startNanos}
   * until {@code total} events were written or {@code deadlineNanos} passed, whichever comes first
   * (writers that cannot keep the pace stop at the deadline anyway).
   */
  static PacedWriters start(
      BenchDatabase db,
      Outbox outbox,
      int writers,
      int rate,
      long total,
      int aggregatesPerWriter,
      long startNanos,
      long deadlineNanos,
      CommitListener listener) {
    PacedWriters paced = new PacedWriters(writers);
    long intervalNanos = TimeUnit.SECONDS.toNanos(1) * writers / rate;
    long perWriter = total / writers;
    for (int w = 0; w < writers; w++) {
      int writer = w;
      // Writers start a quarter interval apart, so their commits do not arrive in bursts.
      long first = startNanos + writer * intervalNanos / 4;
      paced.futures.add(
          paced.threads.submit(
              () ->
                  paced.write(
                      db,
                      outbox,
                      writer,
                      perWriter,
                      aggregatesPerWriter,
                      first,
                      intervalNanos,
                      deadlineNanos,
                      listener)));
    }
    return paced;
  }

  /** Events committed so far. */
  long committed() {
    return committed.get();
  }

  boolean isDone() {
    return futures.stream().allMatch(Future::isDone);
  }

  /** Waits for every writer; returns the highest seq committed per aggregate. */
  Map<String, Integer> await() throws Exception {
    Map<String, Integer> written = new HashMap<>();
    try {
      for (Future<Map<String, Integer>> future : futures) {
        written.putAll(future.get());
      }
    } finally {
      threads.shutdownNow();
    }
    return written;
  }

  private Map<String, Integer> write(
      BenchDatabase db,
      Outbox outbox,
      int writer,
      long total,
      int aggregates,
      long start,
      long intervalNanos,
      long deadline,
      CommitListener listener)
      throws Exception {
    Map<String, Integer> seqs = new HashMap<>();
    try (Connection connection = db.connect()) {
      connection.setAutoCommit(false);
      for (long i = 0; i < total && System.nanoTime() - deadline < 0; i++) {
        long wait = start + i * intervalNanos - System.nanoTime();
        if (wait > 0) {
          LockSupport.parkNanos(wait);
        }
        String aggregate = "w" + writer + "-agg-" + (i % aggregates);
        int seq = seqs.merge(aggregate, 1, Integer::sum);
        UUID id =
            outbox.append(
                connection,
                OutboxEvent.of(
                    "order", aggregate, "order.step", Map.of("aggregate", aggregate, "seq", seq)));
        connection.commit();
        committed.incrementAndGet();
        listener.committed(id, System.nanoTime());
      }
    }
    return seqs;
  }
}

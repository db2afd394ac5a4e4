package dev.pgoutbox.example.chaos;

import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;

/**
 * The chaos run's writers: each owns the aggregates {@code a} with {@code a % writers == index} and
 * appends {@code (aggregate, seq)} events to them, one per transaction, with no gap in any
 * aggregate's seqs. A commit cut off by a crash is ambiguous: the writer then asks the database
 * (once it is back) whether the event's id exists, and counts it only if so, so "written" is
 * exactly what PostgreSQL committed.
 */
final class Writers {

  static final String AGGREGATE_TYPE = "chaos";
  static final String EVENT_TYPE = "step";

  private final DataSource dataSource;
  private final Outbox outbox;
  private final int writers;
  private final int aggregates;
  private final double eventsPerSecond;
  private final long seed;
  private final Map<String, Integer> committed = new ConcurrentHashMap<>();
  private final AtomicLong written = new AtomicLong();
  private final AtomicLong failedAttempts = new AtomicLong();
  private final AtomicLong ambiguousCommits = new AtomicLong();
  private final List<Thread> threads = new ArrayList<>();
  private volatile boolean stopping;

  Writers(
      DataSource dataSource,
      String schema,
      int writers,
      int aggregates,
      double eventsPerSecond,
      long seed) {
    this.dataSource = dataSource;
    this.outbox = Outbox.builder().schema(schema).build();
    this.writers = writers;
    this.aggregates = aggregates;
    this.eventsPerSecond = eventsPerSecond;
    this.seed = seed;
  }

  static String aggregateId(int aggregate) {
    return "agg-" + aggregate;
  }

  void start() {
    for (int w = 0; w < writers; w++) {
      int index = w;
      threads.add(Thread.ofPlatform().name("chaos-writer-" + w).start(() -> write(index)));
    }
  }

  /** Stops writing and waits for each writer to settle its last event. */
  void stop() throws InterruptedException {
    stopping = true;
    for (Thread thread : threads) {
      thread.join();
    }
  }

  /** Events committed. */
  long written() {
    return written.get();
  }

  /** Attempts that failed (database down or cut off) and were retried. */
  long failedAttempts() {
    return failedAttempts.get();
  }

  /** Commits whose outcome the writer had to ask the database about. */
  long ambiguousCommits() {
    return ambiguousCommits.get();
  }

  /** The highest committed seq of each aggregate written to (a copy). */
  Map<String, Integer> committed() {
    return new HashMap<>(committed);
  }

  private void write(int index) {
    List<Integer> owned = new ArrayList<>();
    for (int a = index; a < aggregates; a += writers) {
      owned.add(a);
    }
    if (owned.isEmpty()) {
      return;
    }
    Random random = new Random(seed + index);
    long intervalNanos = (long) (TimeUnit.SECONDS.toNanos(1) * writers / eventsPerSecond);
    long next = System.nanoTime();
    while (!stopping) {
      String aggregate = aggregateId(owned.get(random.nextInt(owned.size())));
      int seq = committed.getOrDefault(aggregate, 0) + 1;
      if (append(aggregate, seq)) {
        committed.put(aggregate, seq);
        written.incrementAndGet();
      } else {
        failedAttempts.incrementAndGet();
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(200)); // the database is away
      }
      next += intervalNanos;
      long now = System.nanoTime();
      if (next > now) {
        LockSupport.parkNanos(next - now);
      } else if (now - next > TimeUnit.SECONDS.toNanos(1)) {
        next = now; // after an outage, resume the rate instead of bursting to catch up
      }
    }
  }

  /** Appends one event in its own transaction; whether it was committed. */
  private boolean append(String aggregate, int seq) {
    OutboxEvent event =
        OutboxEvent.of(
            AGGREGATE_TYPE,
            aggregate,
            EVENT_TYPE,
            Map.of("aggregate", aggregate, "seq", seq, "written_at", System.currentTimeMillis()));
    UUID id;
    try (Connection connection = dataSource.getConnection()) {
      connection.setAutoCommit(false);
      try {
        id = outbox.append(connection, event);
      } catch (RuntimeException e) {
        connection.rollback();
        return false;
      }
      try {
        connection.commit();
        return true;
      } catch (SQLException e) {
        ambiguousCommits.incrementAndGet();
        return wasCommitted(id);
      }
    } catch (SQLException | RuntimeException e) {
      return false;
    }
  }

  /** Asks the database, retrying until it answers, whether event {@code id} exists. */
  private boolean wasCommitted(UUID id) {
    while (true) {
      try (Connection connection = dataSource.getConnection();
          PreparedStatement query =
              connection.prepareStatement(
                  "select count(*) from " + outbox.schema() + ".outbox_events where id = ?")) {
        query.setObject(1, id);
        try (ResultSet rs = query.executeQuery()) {
          rs.next();
          return rs.getLong(1) == 1;
        }
      } catch (SQLException e) {
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(200));
      }
    }
  }
}

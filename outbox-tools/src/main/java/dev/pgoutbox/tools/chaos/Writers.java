package dev.pgoutbox.tools.chaos;

import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;

/**
 * The chaos run's writers, through the real {@link Outbox} with its default per-aggregate lock. The
 * writers are split into groups of {@code writersPerAggregate}; each group owns the aggregates
 * {@code a} with {@code a % groups == g}, and its writers take turns from one ticket counter,
 * {@code writersPerAggregate} consecutive tickets going to the same aggregate, so they write to it
 * at the same moment and contend for its lock. Each event is {@code {"aggregate": a, "seq": n,
 * "written_at": millis, "xid": x}}: {@code seq} is unique within the aggregate but, with several
 * writers, says nothing of the commit order; {@code xid} is the writing transaction's id, whose
 * commit timestamp ({@code track_commit_timestamp}) tells the order PostgreSQL committed them in
 * ({@link CommitLedger}). Every {@code poisonEvery}-th event is of type {@value
 * PublisherFaults#POISON_EVENT_TYPE}. One event per transaction; a failed attempt is retried with
 * the same event. A commit cut off by a crash is ambiguous: the writer then asks the database (once
 * it is back) whether the event's id exists, and counts it only if so, so "written" is exactly what
 * PostgreSQL committed.
 */
final class Writers {

  static final String AGGREGATE_TYPE = "chaos";
  static final String EVENT_TYPE = "step";

  private final DataSource dataSource;
  private final Outbox outbox;
  private final int writers;
  private final int groups;
  private final int aggregates;
  private final double eventsPerSecond;
  private final long seed;
  private final int poisonEvery;
  private final AtomicLong[] tickets;
  private final AtomicIntegerArray seqs;
  private final AtomicIntegerArray inFlight;
  private final AtomicLong events = new AtomicLong();
  private final AtomicLong written = new AtomicLong();
  private final AtomicLong poisonWritten = new AtomicLong();
  private final AtomicLong contended = new AtomicLong();
  private final AtomicLong failedAttempts = new AtomicLong();
  private final AtomicLong ambiguousCommits = new AtomicLong();
  private final List<Thread> threads = new ArrayList<>();
  private volatile boolean stopping;

  Writers(
      DataSource dataSource,
      String schema,
      int writers,
      int writersPerAggregate,
      int aggregates,
      double eventsPerSecond,
      long seed,
      int poisonEvery,
      dev.pgoutbox.core.OutboxTransport transport) {
    this.dataSource = dataSource;
    this.outbox = Outbox.builder().schema(schema).transport(transport).build();
    this.writers = writers;
    this.groups = Math.max(1, writers / writersPerAggregate);
    this.aggregates = aggregates;
    this.eventsPerSecond = eventsPerSecond;
    this.seed = seed;
    this.poisonEvery = poisonEvery;
    this.tickets = new AtomicLong[groups];
    for (int g = 0; g < groups; g++) {
      tickets[g] = new AtomicLong();
    }
    this.seqs = new AtomicIntegerArray(aggregates);
    this.inFlight = new AtomicIntegerArray(aggregates);
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

  /** Events of the poison type committed. */
  long poisonWritten() {
    return poisonWritten.get();
  }

  /** Appends begun while another writer's append to the same aggregate was in flight. */
  long contended() {
    return contended.get();
  }

  /** Attempts that failed (database down or cut off) and were retried. */
  long failedAttempts() {
    return failedAttempts.get();
  }

  /** Commits whose outcome the writer had to ask the database about. */
  long ambiguousCommits() {
    return ambiguousCommits.get();
  }

  private void write(int index) {
    int group = index % groups;
    List<Integer> owned = new ArrayList<>();
    for (int a = group; a < aggregates; a += groups) {
      owned.add(a);
    }
    if (owned.isEmpty()) {
      return;
    }
    int groupSize = (writers - group + groups - 1) / groups;
    long intervalNanos = (long) (TimeUnit.SECONDS.toNanos(1) * writers / eventsPerSecond);
    long next = System.nanoTime();
    while (!stopping) {
      long ticket = tickets[group].getAndIncrement();
      int aggregate = owned.get(pick(ticket / groupSize, owned.size()));
      int seq = seqs.incrementAndGet(aggregate);
      long n = events.incrementAndGet();
      boolean poison = poisonEvery > 0 && n % poisonEvery == 0;
      if (inFlight.getAndIncrement(aggregate) > 0) {
        contended.incrementAndGet();
      }
      try {
        while (!append(aggregateId(aggregate), seq, poison)) {
          failedAttempts.incrementAndGet();
          if (stopping) {
            break; // never committed: the ledger reads what was
          }
          LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(200)); // the database is away
        }
      } finally {
        inFlight.decrementAndGet(aggregate);
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

  /** A seeded pick in {@code [0, bound)} for the {@code n}-th aggregate turn of a group. */
  private int pick(long n, int bound) {
    long z = seed * 0x9E3779B97F4A7C15L + n;
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    z ^= z >>> 31;
    return (int) Math.floorMod(z, (long) bound);
  }

  /** Appends one event in its own transaction; whether it was committed. */
  private boolean append(String aggregate, int seq, boolean poison) {
    UUID id;
    try (Connection connection = dataSource.getConnection()) {
      connection.setAutoCommit(false);
      try {
        long xid;
        try (Statement statement = connection.createStatement();
            ResultSet rs = statement.executeQuery("select pg_current_xact_id()::text")) {
          rs.next();
          xid = Long.parseLong(rs.getString(1));
        }
        OutboxEvent event =
            OutboxEvent.of(
                AGGREGATE_TYPE,
                aggregate,
                poison ? PublisherFaults.POISON_EVENT_TYPE : EVENT_TYPE,
                Map.of(
                    "aggregate",
                    aggregate,
                    "seq",
                    seq,
                    "written_at",
                    System.currentTimeMillis(),
                    "xid",
                    xid));
        id = outbox.append(connection, event);
      } catch (SQLException | RuntimeException e) {
        connection.rollback();
        return false;
      }
      try {
        connection.commit();
      } catch (SQLException e) {
        ambiguousCommits.incrementAndGet();
        if (!wasCommitted(id)) {
          return false;
        }
      }
      written.incrementAndGet();
      if (poison) {
        poisonWritten.incrementAndGet();
      }
      return true;
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

package dev.pgoutbox.tools.chaos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgoutbox.admin.DeadLetter;
import dev.pgoutbox.admin.OutboxAdmin;
import java.io.PrintWriter;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;

/**
 * The operator of a chaos run: every {@code every} seconds, through {@link OutboxAdmin}, it lists
 * the dead letters and retries each with probability one half (seeded), while the writers write
 * (and after, until it has retried at least once, see {@link #windDown}). A retried poison event
 * dies again; another is likely to go through. It remembers what it retried (aggregate and seq,
 * from the payload) for the {@link CommitLedger}. A database that does not answer is skipped until
 * the next round.
 */
final class DeadLetterRetrier {

  private static final ObjectMapper JSON = new ObjectMapper();

  private final OutboxAdmin admin;
  private final long everyNanos;
  private final Random random;
  private final PrintWriter log;
  private final Map<String, Set<Integer>> retried = new HashMap<>();
  private final AtomicLong retries = new AtomicLong();
  private final AtomicLong rounds = new AtomicLong();
  private final AtomicLong failedRounds = new AtomicLong();
  private volatile boolean stopping;
  private volatile boolean windingDown;
  private Thread thread;

  DeadLetterRetrier(
      DataSource dataSource, String schema, int everySeconds, long seed, PrintWriter log) {
    this.admin = OutboxAdmin.builder().dataSource(dataSource).schema(schema).build();
    this.everyNanos = TimeUnit.SECONDS.toNanos(everySeconds);
    this.random = new Random(seed ^ 0x5DEECE66DL);
    this.log = log;
  }

  void start() {
    thread = Thread.ofPlatform().name("chaos-admin").start(this::run);
  }

  /**
   * The writers have stopped: retry rounds go on only until one has retried something, so that a
   * run whose relays were slow to dead-letter anything still retries once, and then it ends.
   */
  void windDown() {
    windingDown = true;
  }

  /** Whether it still retries (not stopped, not wound down). */
  boolean running() {
    return thread.isAlive();
  }

  /** Stops retrying and waits for the round in progress. */
  void stop() throws InterruptedException {
    stopping = true;
    LockSupport.unpark(thread);
    thread.join();
  }

  private void run() {
    long next = System.nanoTime() + everyNanos;
    while (!stopping) {
      long now = System.nanoTime();
      if (now < next) {
        LockSupport.parkNanos(next - now);
        continue;
      }
      next += everyNanos;
      round();
      if (windingDown && retries.get() > 0) {
        return;
      }
    }
  }

  private void round() {
    rounds.incrementAndGet();
    try {
      List<DeadLetter> dead = admin.deadLetters(OutboxAdmin.MAX_PAGE, 0);
      int count = 0;
      for (DeadLetter letter : dead) {
        if (stopping || !random.nextBoolean()) {
          continue;
        }
        JsonNode payload = JSON.readTree(letter.payload());
        if (admin.retry(letter.id())) {
          synchronized (retried) {
            retried
                .computeIfAbsent(letter.aggregateId(), k -> new HashSet<>())
                .add(payload.get("seq").asInt());
          }
          retries.incrementAndGet();
          count++;
        }
      }
      log.printf(
          Locale.ROOT, "chaos admin: %d dead letters listed, %d retried%n", dead.size(), count);
      log.flush();
    } catch (Exception e) {
      failedRounds.incrementAndGet(); // the database is away: next round
    }
  }

  /** Retries done. */
  long retries() {
    return retries.get();
  }

  /** Rounds that could not reach the database. */
  long failedRounds() {
    return failedRounds.get();
  }

  /** What was retried: aggregate to seqs (a copy). */
  Map<String, Set<Integer>> retried() {
    Map<String, Set<Integer>> copy = new HashMap<>();
    synchronized (retried) {
      retried.forEach((k, v) -> copy.put(k, new HashSet<>(v)));
    }
    return copy;
  }
}

package dev.pgoutbox.tools.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.relay.ClaimProbe;
import dev.pgoutbox.relay.Completion;
import dev.pgoutbox.relay.DeadLetterPolicy;
import dev.pgoutbox.relay.Ordering;
import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.PublishTracing;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.RelayListener;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * Drains a preloaded outbox: with real relays, with their bare SQL (the ceiling), with the naive
 * relay (the baseline), or with PostgreSQL alone (the limit). Each preloads identical data.
 */
final class Drains {

  /** Settings of one drain. */
  record Setup(
      int events,
      int aggregates,
      int relays,
      int batch,
      Ordering ordering,
      Completion completion,
      boolean batchGiven,
      boolean completionGiven) {

    /**
     * The WAL relay's config: {@code batch} and {@code completion} where given on the command line,
     * else the WAL relay's own defaults (what a user gets without tuning).
     */
    RelayConfig.Builder walConfig() {
      RelayConfig.Builder b = RelayConfig.builder();
      if (batchGiven) {
        b.batchSize(batch);
      }
      if (completionGiven) {
        b.completion(completion);
      }
      return b;
    }
  }

  /**
   * How a drain went.
   *
   * @param events events published (or marked, for the SQL-only loops)
   * @param check the delivery check, or null where nothing was delivered (the SQL-only loops)
   * @param remaining rows still pending in the table once the drain was over
   * @param tableBytesBefore the outbox table's size with its indexes once preloaded, -1 if not
   *     measured
   * @param tableBytesAfter the same once the drain was over
   */
  record Outcome(
      long events,
      double seconds,
      Deliveries.@Nullable Check check,
      long remaining,
      long tableBytesBefore,
      long tableBytesAfter) {

    /** An outcome that did not measure the outbox table's size. */
    Outcome(long events, double seconds, Deliveries.@Nullable Check check, long remaining) {
      this(events, seconds, check, remaining, -1, -1);
    }

    double eventsPerSecond() {
      return events / seconds;
    }
  }

  private Drains() {}

  /** Preloads, then drains with {@code setup.relays()} real relays and {@code publisher}. */
  static Outcome relays(BenchDatabase db, Setup setup, PublisherFactory publishers)
      throws Exception {
    return relays(db, setup, publishers, PublishTracing.NONE, false);
  }

  /**
   * As {@link #relays(BenchDatabase, Setup, PublisherFactory)}, the relays tracing with {@code
   * tracing}, the events carrying a stored {@code traceparent} when {@code traceparent}.
   */
  static Outcome relays(
      BenchDatabase db,
      Setup setup,
      PublisherFactory publishers,
      PublishTracing tracing,
      boolean traceparent)
      throws Exception {
    db.resetSchema();
    Map<String, Integer> written = db.preload(setup.events(), setup.aggregates(), traceparent);
    Deliveries deliveries = new Deliveries();
    AtomicLong committed = new AtomicLong();
    CountDownLatch done = new CountDownLatch(1);
    RelayListener counter =
        new RelayListener() {
          @Override
          public void onBatch(BatchReport report) {
            if (committed.addAndGet(report.published()) >= setup.events()) {
              done.countDown();
            }
          }
        };
    RelayConfig config =
        RelayConfig.builder()
            .batchSize(setup.batch())
            .ordering(setup.ordering())
            .completion(setup.completion())
            .listenForNotifications(false)
            .pollInterval(Duration.ofMillis(5))
            .build();
    List<OutboxRelay> relays = new ArrayList<>();
    List<ScheduledExecutorService> executors = new ArrayList<>();
    List<Publisher> created = new ArrayList<>();
    try {
      for (int i = 0; i < setup.relays(); i++) {
        HikariDataSource pool = db.pool(2);
        ScheduledExecutorService executor =
            Executors.newScheduledThreadPool(
                1, Thread.ofPlatform().name("bench-relay-" + i).factory());
        executors.add(executor);
        Publisher publisher = publishers.create(deliveries);
        created.add(publisher);
        relays.add(
            OutboxRelay.builder()
                .name("bench-" + i)
                .dataSource(pool)
                .schema(db.schema())
                .publisher(publisher)
                .executor(executor)
                .config(config)
                .listener(counter)
                .tracing(tracing)
                .build());
      }
      long start = System.nanoTime();
      relays.forEach(OutboxRelay::start);
      if (!done.await(30, TimeUnit.MINUTES)) {
        throw new IllegalStateException("drain did not finish within 30 minutes");
      }
      double seconds = (System.nanoTime() - start) / 1e9;
      relays.forEach(OutboxRelay::close);
      return new Outcome(committed.get(), seconds, deliveries.check(written), db.pending());
    } finally {
      relays.forEach(OutboxRelay::close);
      executors.forEach(ExecutorService::shutdownNow);
      for (Publisher publisher : created) {
        publisher.close();
      }
    }
  }

  /**
   * Preloads the same data, then drains it with the relay's own claim and mark statements in a
   * tight loop, one connection per relay, with no publisher and no Java-side work: the most
   * PostgreSQL can do for this protocol on this machine.
   */
  static Outcome ceiling(BenchDatabase db, Setup setup) throws Exception {
    db.resetSchema();
    db.preload(setup.events(), setup.aggregates());
    AtomicLong marked = new AtomicLong();
    ExecutorService threads = Executors.newFixedThreadPool(setup.relays());
    List<Future<?>> futures = new ArrayList<>();
    long start = System.nanoTime();
    for (int i = 0; i < setup.relays(); i++) {
      futures.add(
          threads.submit(
              () -> {
                ClaimProbe probe =
                    ClaimProbe.builder()
                        .name("ceiling")
                        .schema(db.schema())
                        .config(
                            RelayConfig.builder()
                                .batchSize(setup.batch())
                                .ordering(setup.ordering())
                                .completion(setup.completion())
                                .deadLetterPolicy(DeadLetterPolicy.HOLD_AGGREGATE)
                                .build())
                        .build();
                try (Connection connection = db.connect()) {
                  connection.setAutoCommit(false);
                  while (marked.get() < setup.events()) {
                    // The relay's transaction settings (asynchronous commit), claim and mark.
                    int claimed = probe.claim(connection);
                    probe.complete(connection);
                    connection.commit();
                    marked.addAndGet(claimed);
                    if (claimed == 0) {
                      Thread.sleep(1);
                    }
                  }
                }
                return null;
              }));
    }
    for (Future<?> future : futures) {
      future.get();
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    threads.shutdownNow();
    return new Outcome(marked.get(), seconds, null, db.pending());
  }

  /**
   * Preloads the same data, then drains it with the naive relay most write-ups show, run
   * continuously: {@code setup.relays()} connections, each claiming {@code ... WHERE processed_at
   * IS NULL ORDER BY created_at LIMIT batch FOR UPDATE SKIP LOCKED}, marking each row with its own
   * {@code UPDATE ... WHERE id = ?}, committing, and claiming again at once while batches come back
   * full (5 ms later otherwise, the drain's poll interval). Plain JDBC, default session settings,
   * and the index its claim needs ({@link #NAIVE_INDEX}). With {@code batchedMarks} the per-row
   * updates go to the server as one JDBC batch (one round trip per claim): the strongest form of
   * the naive relay, a stricter yardstick. It promises no order: its {@code reordered} is measured
   * and reported, never a failure.
   */
  static Outcome baseline(BenchDatabase db, Setup setup, boolean batchedMarks) throws Exception {
    db.resetSchema();
    Map<String, Integer> written = db.preload(setup.events(), setup.aggregates());
    // The index the naive claim needs: without it every claim sorts the whole pending set (120 ms
    // per claim at 100,000 pending rows), and the yardstick would measure a missing index.
    db.execute(NAIVE_INDEX);
    Deliveries deliveries = new Deliveries();
    AtomicLong marked = new AtomicLong();
    ExecutorService threads = Executors.newFixedThreadPool(setup.relays());
    List<Future<?>> futures = new ArrayList<>();
    CountDownLatch ready = new CountDownLatch(setup.relays());
    CountDownLatch go = new CountDownLatch(1);
    try {
      for (int i = 0; i < setup.relays(); i++) {
        futures.add(
            threads.submit(
                () -> {
                  try (Connection connection = db.connect();
                      PreparedStatement claim = connection.prepareStatement(NAIVE_CLAIM);
                      PreparedStatement mark = connection.prepareStatement(NAIVE_MARK)) {
                    connection.setAutoCommit(false);
                    claim.setInt(1, setup.batch());
                    ready.countDown();
                    go.await();
                    while (marked.get() < setup.events()) {
                      List<String> payloads = new ArrayList<>(setup.batch());
                      try (ResultSet rs = claim.executeQuery()) {
                        while (rs.next()) {
                          payloads.add(rs.getString(2));
                          mark.setObject(1, rs.getObject(1));
                          if (batchedMarks) {
                            mark.addBatch();
                          } else {
                            mark.executeUpdate();
                          }
                        }
                      }
                      if (batchedMarks && !payloads.isEmpty()) {
                        mark.executeBatch();
                      }
                      connection.commit();
                      deliveries.addPayloads(payloads);
                      marked.addAndGet(payloads.size());
                      if (payloads.size() < setup.batch()) {
                        // The naive relay's idle wait as write-ups show it: a short batch means the
                        // other instance holds the rest; poll again shortly (not a test wait).
                        Thread.sleep(5);
                      }
                    }
                  }
                  return null;
                }));
      }
      ready.await();
      long start = System.nanoTime();
      go.countDown();
      for (Future<?> future : futures) {
        future.get();
      }
      double seconds = (System.nanoTime() - start) / 1e9;
      return new Outcome(marked.get(), seconds, deliveries.check(written), db.pending());
    } finally {
      threads.shutdownNow();
    }
  }

  static final String NAIVE_CLAIM =
      "SELECT id, payload::text FROM outbox_events WHERE processed_at IS NULL"
          + " ORDER BY created_at LIMIT ? FOR UPDATE SKIP LOCKED";

  static final String NAIVE_MARK = "UPDATE outbox_events SET processed_at = now() WHERE id = ?";

  static final String NAIVE_INDEX =
      "CREATE INDEX outbox_events_naive_claim_idx ON outbox_events (created_at)"
          + " WHERE processed_at IS NULL";

  /**
   * Preloads the same data, then has PostgreSQL mark (or delete) it with no client in the loop:
   * {@code sessions} sessions each run one PL/pgSQL block that completes its own share of the rows
   * by position, {@code rowsPerCommit} at a time ({@code position >= lo AND position < lo + n},
   * session {@code i} taking every {@code sessions}-th range), and commits after each range. No row
   * locks and no contention between the sessions: the fastest way PostgreSQL itself completes these
   * rows on this machine, the relay's upper bound. Asynchronous commit, as the relay's
   * transactions.
   */
  static Outcome limit(BenchDatabase db, Setup setup, int sessions, int rowsPerCommit)
      throws Exception {
    db.resetSchema();
    db.preload(setup.events(), setup.aggregates());
    long before = db.queryLong("SELECT count(*) FROM outbox_events");
    long first = db.queryLong("SELECT min(position) FROM outbox_events");
    long last = db.queryLong("SELECT max(position) FROM outbox_events");
    String complete =
        setup.completion() == Completion.DELETE
            ? "DELETE FROM outbox_events"
            : "UPDATE outbox_events SET processed_at = now()";
    ExecutorService threads = Executors.newFixedThreadPool(sessions);
    List<Future<?>> futures = new ArrayList<>();
    CountDownLatch ready = new CountDownLatch(sessions);
    CountDownLatch go = new CountDownLatch(1);
    try {
      for (int i = 0; i < sessions; i++) {
        int session = i;
        futures.add(
            threads.submit(
                () -> {
                  String loop =
                      "DO $$ DECLARE lo bigint := "
                          + (first + (long) session * rowsPerCommit)
                          + "; BEGIN PERFORM set_config('synchronous_commit', 'off', false);"
                          + " WHILE lo <= "
                          + last
                          + " LOOP "
                          + complete
                          + " WHERE position >= lo AND position < lo + "
                          + rowsPerCommit
                          + " AND processed_at IS NULL; COMMIT; lo := lo + "
                          + ((long) sessions * rowsPerCommit)
                          + "; END LOOP; END $$";
                  try (Connection connection = db.connect();
                      Statement statement = connection.createStatement()) {
                    ready.countDown();
                    go.await();
                    statement.execute(loop);
                  }
                  return null;
                }));
      }
      ready.await();
      long start = System.nanoTime();
      go.countDown();
      for (Future<?> future : futures) {
        future.get();
      }
      double seconds = (System.nanoTime() - start) / 1e9;
      long remaining = db.pending();
      long done =
          setup.completion() == Completion.DELETE
              ? before - db.queryLong("SELECT count(*) FROM outbox_events")
              : before - remaining;
      return new Outcome(done, seconds, null, remaining);
    } finally {
      threads.shutdownNow();
    }
  }

  /** Rows the limit's loop completes per statement and commit, unless told otherwise. */
  static final int LIMIT_ROWS_PER_COMMIT = 1_000;

  /** Makes one publisher per relay, recording into the shared deliveries. */
  @FunctionalInterface
  interface PublisherFactory {
    Publisher create(Deliveries deliveries) throws Exception;

    /** Publishes nothing anywhere: records the batch and answers "published" at once. */
    static PublisherFactory noop() {
      return deliveries ->
          batch -> {
            deliveries.addAll(batch);
            return CompletableFuture.completedFuture(
                Collections.nCopies(batch.size(), PublishResult.published()));
          };
    }
  }
}

package dev.pgoutbox.example.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.Completion;
import dev.pgoutbox.relay.DeadLetterPolicy;
import dev.pgoutbox.relay.Ordering;
import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.RelayListener;
import dev.pgoutbox.relay.internal.ClaimedRow;
import dev.pgoutbox.relay.internal.Claimer;
import dev.pgoutbox.relay.internal.Marker;
import dev.pgoutbox.relay.internal.Sql;
import java.sql.Connection;
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
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;

/** Drains a preloaded outbox with real relays, or with their bare SQL (the ceiling). */
final class Drains {

  /** Settings of one drain. */
  record Setup(
      int events,
      int aggregates,
      int relays,
      int batch,
      Ordering ordering,
      Completion completion) {}

  /** How a drain went. */
  record Outcome(long events, double seconds, Deliveries.Check check) {
    double eventsPerSecond() {
      return events / seconds;
    }
  }

  private Drains() {}

  /** Preloads, then drains with {@code setup.relays()} real relays and {@code publisher}. */
  static Outcome relays(BenchDatabase db, Setup setup, PublisherFactory publishers)
      throws Exception {
    db.resetSchema();
    Map<String, Integer> written = db.preload(setup.events(), setup.aggregates());
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
        RelayConfig.custom()
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
                .build());
      }
      long start = System.nanoTime();
      relays.forEach(OutboxRelay::start);
      if (!done.await(30, TimeUnit.MINUTES)) {
        throw new IllegalStateException("drain did not finish within 30 minutes");
      }
      double seconds = (System.nanoTime() - start) / 1e9;
      return new Outcome(committed.get(), seconds, deliveries.check(written));
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
                Claimer claimer =
                    new Claimer(setup.batch(), setup.ordering(), DeadLetterPolicy.HOLD_AGGREGATE);
                Marker marker = new Marker(setup.completion());
                try (Connection connection = db.connect()) {
                  connection.setAutoCommit(false);
                  DSLContext tx =
                      DSL.using(
                          connection, SQLDialect.POSTGRES, OutboxSchema.jooqSettings(db.schema()));
                  RelayConfig defaults = RelayConfig.ofDefaults();
                  while (marked.get() < setup.events()) {
                    // The same transaction settings as the relay's (asynchronous commit).
                    Sql.configureClaimTransaction(
                        tx,
                        Sql.applicationName("ceiling"),
                        defaults.publishTimeout(),
                        defaults.synchronousCommit());
                    List<ClaimedRow> rows = claimer.claim(tx);
                    List<Long> positions = new ArrayList<>(rows.size());
                    for (ClaimedRow row : rows) {
                      positions.add(row.position());
                    }
                    marker.published(tx, positions);
                    connection.commit();
                    marked.addAndGet(rows.size());
                    if (rows.isEmpty()) {
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
    long pending = db.queryLong("SELECT count(*) FROM outbox_events WHERE processed_at IS NULL");
    return new Outcome(marked.get(), seconds, new Deliveries.Check(pending, 0, 0));
  }

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

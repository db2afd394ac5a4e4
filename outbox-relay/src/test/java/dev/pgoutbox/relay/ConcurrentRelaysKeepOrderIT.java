package dev.pgoutbox.relay;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.DeliveryChecker;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import io.github.resilience4j.core.IntervalFunction;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Four relays, each with its own connections and executor, drain events written concurrently by
 * several writers while their publisher fails at random. An independent checker over (aggregate,
 * seq) finds nothing lost and nothing reordered within an aggregate. Each seed is a different
 * random interleaving of writes, failures and claims.
 */
class ConcurrentRelaysKeepOrderIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static final int RELAYS = 4;
  private static final int WRITERS = 3;
  private static final int AGGREGATES = 150;
  private static final int EVENTS_PER_AGGREGATE = 20;

  @ParameterizedTest(name = "seed {0}")
  @ValueSource(longs = {1L, 2L, 3L})
  void noLossAndNoReorderingWithFourRelaysAndRandomFailures(long seed) throws Exception {
    db.execute("truncate outbox_events");
    Random failures = new Random(seed);
    RecordingPublisher publisher =
        new RecordingPublisher()
            .decide(
                m -> {
                  synchronized (failures) {
                    return failures.nextInt(100) < 15
                        ? PublishResult.retryable("random broker hiccup")
                        : PublishResult.published();
                  }
                });
    RelayConfig config =
        RelayConfig.builder()
            .batchSize(50)
            .pollInterval(Duration.ofMillis(20))
            .backoff(IntervalFunction.of(Duration.ofMillis(5)))
            .maxAttempts(1_000)
            .build();

    List<HikariDataSource> pools = new ArrayList<>();
    List<OutboxRelay> relays = new ArrayList<>();
    List<ScheduledExecutorService> executors = new ArrayList<>();
    Map<String, Integer> written = new ConcurrentHashMap<>();
    try {
      for (int i = 0; i < RELAYS; i++) {
        HikariDataSource pool = db.newPool(2);
        ScheduledExecutorService executor =
            Executors.newScheduledThreadPool(2, Thread.ofVirtual().factory());
        pools.add(pool);
        executors.add(executor);
        OutboxRelay relay =
            OutboxRelay.builder()
                .name("relay-" + i)
                .dataSource(pool)
                .schema(db.schema())
                .publisher(publisher)
                .executor(executor)
                .config(config)
                .build();
        relays.add(relay);
        relay.start();
      }

      writeConcurrently(seed, written);

      long total = (long) AGGREGATES * EVENTS_PER_AGGREGATE;
      boolean drained =
          Eventually.holdsWithin(
              () ->
                  db.dsl()
                          .fetchCount(
                              dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS,
                              dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS.PROCESSED_AT.isNull())
                      == 0,
              120);
      assertThat(drained).as("all events processed within the deadline").isTrue();
      DeliveryChecker.Verdict report =
          DeliveryChecker.check(written, publisher.deliveredPayloads());
      System.out.println("seed " + seed + ": " + report);
      assertThat(report.written()).isEqualTo(total);
      assertThat(report.lost()).as("lost").isZero();
      assertThat(report.reordered()).as("reordered").isZero();
      assertThat(report.duplicates()).as("duplicates without any crash").isZero();
    } finally {
      relays.forEach(OutboxRelay::close);
      executors.forEach(ExecutorService::shutdownNow);
      pools.forEach(HikariDataSource::close);
    }
  }

  /** Each writer owns a third of the aggregates and writes them in transactions of 1-5 events. */
  private static void writeConcurrently(long seed, Map<String, Integer> written) throws Exception {
    ExecutorService writers = Executors.newFixedThreadPool(WRITERS);
    try {
      List<Future<?>> futures = new ArrayList<>();
      for (int w = 0; w < WRITERS; w++) {
        int writer = w;
        futures.add(
            writers.submit(
                () -> {
                  Random random = new Random(seed * 31 + writer);
                  DSLContext dsl =
                      DSL.using(
                          db.dataSource(),
                          SQLDialect.POSTGRES,
                          dev.pgoutbox.db.OutboxSchema.jooqSettings(db.schema()));
                  List<String> mine = new ArrayList<>();
                  for (int a = writer; a < AGGREGATES; a += WRITERS) {
                    mine.add("agg-" + a);
                  }
                  Map<String, Integer> next = new java.util.HashMap<>();
                  int remaining = mine.size() * EVENTS_PER_AGGREGATE;
                  while (remaining > 0) {
                    int size = Math.min(remaining, 1 + random.nextInt(5));
                    List<String> picks = new ArrayList<>();
                    for (int i = 0; i < size; i++) {
                      String aggregate;
                      do {
                        aggregate = mine.get(random.nextInt(mine.size()));
                      } while (next.getOrDefault(aggregate, 0) >= EVENTS_PER_AGGREGATE);
                      picks.add(aggregate);
                      next.merge(aggregate, 1, Integer::sum);
                    }
                    Map<String, Integer> before = new java.util.HashMap<>(next);
                    picks.forEach(p -> before.merge(p, -1, Integer::sum));
                    dsl.transaction(
                        tx -> {
                          Map<String, Integer> seq = new java.util.HashMap<>(before);
                          for (String aggregate : picks) {
                            int n = seq.merge(aggregate, 1, Integer::sum);
                            EventRows.insert(tx.dsl(), aggregate, n);
                          }
                        });
                    for (String aggregate : picks) {
                      written.put(aggregate, next.get(aggregate));
                    }
                    remaining -= size;
                  }
                  return null;
                }));
      }
      for (Future<?> future : futures) {
        future.get();
      }
    } finally {
      writers.shutdownNow();
    }
  }
}

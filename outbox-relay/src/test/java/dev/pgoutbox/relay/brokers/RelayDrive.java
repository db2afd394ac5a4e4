package dev.pgoutbox.relay.brokers;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.testing.DeadRows;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import io.github.resilience4j.core.IntervalFunction;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.stream.Collectors;
import org.jooq.DSLContext;
import org.jooq.JSONB;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;

/**
 * Drives a real {@link OutboxRelay} over the real outbox table for broker tests: writes events into
 * the test's schema as a writer would, runs relays with a given publisher until nothing is pending,
 * and reads dead letters back.
 */
public final class RelayDrive {

  private final TestSchema db;

  /** A drive on the test class's schema. */
  public RelayDrive(TestSchema db) {
    this.db = db;
  }

  /** Empties the outbox. */
  public RelayDrive truncate() {
    db.execute("truncate outbox_events");
    return this;
  }

  /** Inserts {@code events} in their written order, {@code 1000} rows per transaction. */
  public RelayDrive write(List<OutboxMessage> events) {
    DSLContext dsl = dsl();
    for (int from = 0; from < events.size(); from += 1000) {
      List<OutboxMessage> chunk = events.subList(from, Math.min(events.size(), from + 1000));
      dsl.transaction(
          tx -> {
            var insert =
                tx.dsl()
                    .insertInto(
                        OUTBOX_EVENTS,
                        OUTBOX_EVENTS.ID,
                        OUTBOX_EVENTS.AGGREGATE_TYPE,
                        OUTBOX_EVENTS.AGGREGATE_ID,
                        OUTBOX_EVENTS.EVENT_TYPE,
                        OUTBOX_EVENTS.PAYLOAD,
                        OUTBOX_EVENTS.HEADERS);
            for (OutboxMessage m : chunk) {
              insert =
                  insert.values(
                      m.id(),
                      m.aggregateType(),
                      m.aggregateId(),
                      m.eventType(),
                      JSONB.valueOf(m.payload()),
                      JSONB.valueOf(headersJson(m.headers())));
            }
            insert.execute();
          });
    }
    return this;
  }

  /**
   * Runs {@code relays} relays with {@code publisher} (strict ordering, batches of {@code
   * batchSize}, short backoff) until no event is pending, or fails after {@code deadline}.
   *
   * @return how long the drain took
   */
  public Duration drain(Publisher publisher, int relays, int batchSize, Duration deadline)
      throws Exception {
    RelayConfig config =
        RelayConfig.builder()
            .batchSize(batchSize)
            .pollInterval(Duration.ofMillis(50))
            .backoff(IntervalFunction.of(Duration.ofMillis(200)))
            .maxAttempts(1_000)
            .publishTimeout(Duration.ofSeconds(60))
            .build();
    List<OutboxRelay> started = new ArrayList<>();
    List<ScheduledExecutorService> executors = new ArrayList<>();
    long start = System.nanoTime();
    try {
      for (int i = 0; i < relays; i++) {
        ScheduledExecutorService executor =
            Executors.newScheduledThreadPool(2, Thread.ofVirtual().factory());
        executors.add(executor);
        OutboxRelay relay =
            OutboxRelay.builder()
                .name("broker-test-" + i)
                .dataSource(db.dataSource())
                .schema(db.schema())
                .publisher(publisher)
                .executor(executor)
                .config(config)
                .build();
        started.add(relay);
        relay.start();
      }
      Eventually.await(
          "the relays to drain the outbox (pending " + pending() + ")",
          deadline,
          () -> pending() == 0);
      return Duration.ofNanos(System.nanoTime() - start);
    } finally {
      started.forEach(OutboxRelay::close);
      executors.forEach(ExecutorService::shutdownNow);
    }
  }

  /** {@link #drain} on a thread of its own; the stage completes when the outbox is drained. */
  public CompletableFuture<Duration> drainInBackground(
      Publisher publisher, int relays, int batchSize, Duration deadline) {
    CompletableFuture<Duration> done = new CompletableFuture<>();
    Thread.ofPlatform()
        .name("relay-drive")
        .daemon(true)
        .start(
            () -> {
              try {
                done.complete(drain(publisher, relays, batchSize, deadline));
              } catch (Throwable e) {
                done.completeExceptionally(e);
              }
            });
    return done;
  }

  /**
   * Runs batches on {@code relay}, one at a time on this thread, until no event is pending, or
   * fails after {@code deadline}.
   */
  public void runUntilDrained(OutboxRelay relay, Duration deadline) {
    Eventually.await(
        "the relay to publish every event",
        deadline,
        () -> {
          try {
            relay.runOnce();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
          }
          return pending() == 0;
        });
  }

  /** Unprocessed, not dead events. */
  public long pending() {
    return dsl()
        .fetchCount(
            OUTBOX_EVENTS, OUTBOX_EVENTS.PROCESSED_AT.isNull().and(OUTBOX_EVENTS.DEAD_AT.isNull()));
  }

  /** Events that failed at least once (attempts above zero). */
  public long failedAttempts() {
    return dsl().fetchCount(OUTBOX_EVENTS, OUTBOX_EVENTS.ATTEMPTS.gt(0));
  }

  /** Published events. */
  public long processed() {
    return dsl().fetchCount(OUTBOX_EVENTS, OUTBOX_EVENTS.PROCESSED_AT.isNotNull());
  }

  /** The dead letters, oldest first. */
  public List<DeadRows.Dead> deadLetters() {
    return DeadRows.list(dsl());
  }

  /** Asserts that everything but {@code dead} was published. */
  public void assertAllPublishedBut(int dead) {
    assertThat(deadLetters()).hasSize(dead);
    assertThat(pending()).isZero();
  }

  private DSLContext dsl() {
    return DSL.using(db.dataSource(), SQLDialect.POSTGRES, OutboxSchema.jooqSettings(db.schema()));
  }

  private static String headersJson(Map<String, String> headers) {
    return headers.entrySet().stream()
        .map(e -> quote(e.getKey()) + ":" + quote(e.getValue()))
        .collect(Collectors.joining(",", "{", "}"));
  }

  private static String quote(String s) {
    return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }
}

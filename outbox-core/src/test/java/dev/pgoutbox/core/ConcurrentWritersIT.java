package dev.pgoutbox.core;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.core.internal.Ids;
import dev.pgoutbox.db.jooq.tables.records.OutboxEventsRecord;
import dev.pgoutbox.testing.TestSchema;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.jooq.DSLContext;
import org.jooq.Record2;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Many concurrent writers lose nothing, and their ids are unique and time-ordered. */
class ConcurrentWritersIT {

  private static final int THREADS = 8;
  private static final int TRANSACTIONS_PER_THREAD = 1_000;
  private static final long TIMEOUT_SECONDS = 300;

  @RegisterExtension static final TestSchema db = TestSchema.migrated(THREADS + 2);

  private static DSLContext host;
  private static ExecutorService executor;

  @BeforeAll
  static void setUp() {
    db.execute("CREATE TABLE orders (id bigint PRIMARY KEY, thread int NOT NULL)");
    db.execute(
        "CREATE TABLE ledger (aggregate_id text NOT NULL, seq bigint NOT NULL, event_id uuid)");
    host = DSL.using(db.dataSource(), SQLDialect.POSTGRES);
    executor = Executors.newFixedThreadPool(THREADS);
  }

  @BeforeEach
  void empty() {
    db.execute("TRUNCATE orders, ledger, outbox_events");
  }

  @AfterAll
  static void stop() {
    executor.shutdownNow();
  }

  /**
   * 8 threads x 1,000 transactions, each an order row and its event. Asserted, and why it holds:
   *
   * <ul>
   *   <li>no loss: 8,000 orders and 8,000 events, every returned id stored once;
   *   <li>unique: 8,000 distinct ids (the primary key would also refuse a duplicate, failing the
   *       writer);
   *   <li>time-ordered: every id is a UUIDv7 whose timestamp lies between the test's start and end;
   *       and an id is greater than the id of every event whose transaction committed before its
   *       append began, in any thread (the JVM has one monotonic generator, and the commit
   *       happens-before the next append through the shared watermark). Hence each thread's ids
   *       increase in its commit order, as do their positions. Ids of transactions in flight at the
   *       same time are not ordered by position: an id is made before the insert takes its
   *       position, so two concurrent writers can take them in opposite orders.
   * </ul>
   */
  @Test
  void eightThreadsOfAThousandTransactionsLoseNothingAndIdsAreUniqueAndTimeOrdered()
      throws Exception {
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    AtomicReference<UUID> committedWatermark = new AtomicReference<>(new UUID(0, 0));
    CountDownLatch start = new CountDownLatch(1);
    long startMillis = System.currentTimeMillis();

    List<Future<List<UUID>>> threads = new ArrayList<>();
    for (int t = 0; t < THREADS; t++) {
      int thread = t;
      Callable<List<UUID>> writer =
          () -> {
            start.await();
            List<UUID> ids = new ArrayList<>(TRANSACTIONS_PER_THREAD);
            for (int i = 0; i < TRANSACTIONS_PER_THREAD; i++) {
              int seq = i;
              long orderId = (long) thread * TRANSACTIONS_PER_THREAD + i;
              UUID before = committedWatermark.get();
              UUID id =
                  host.transactionResult(
                      tx -> {
                        tx.dsl().execute("INSERT INTO orders VALUES (?, ?)", orderId, thread);
                        return outbox.append(
                            tx.dsl(),
                            OutboxEvent.of(
                                "order",
                                Long.toString(orderId),
                                "order.created",
                                Map.of("thread", thread, "seq", seq)));
                      });
              assertThat(id).as("id after a committed id").isGreaterThan(before);
              committedWatermark.accumulateAndGet(id, (a, b) -> a.compareTo(b) >= 0 ? a : b);
              ids.add(id);
            }
            return ids;
          };
      threads.add(executor.submit(writer));
    }
    start.countDown();
    List<List<UUID>> idsByThread = new ArrayList<>();
    for (Future<List<UUID>> thread : threads) {
      idsByThread.add(thread.get(TIMEOUT_SECONDS, TimeUnit.SECONDS));
    }
    long endMillis = System.currentTimeMillis();

    assertThat(Stored.count(db, "orders")).isEqualTo(THREADS * TRANSACTIONS_PER_THREAD);
    List<OutboxEventsRecord> stored = Stored.events(db);
    assertThat(stored).hasSize(THREADS * TRANSACTIONS_PER_THREAD);
    assertThat(
            db.dsl()
                .fetchValue(DSL.select(DSL.countDistinct(OUTBOX_EVENTS.ID)).from(OUTBOX_EVENTS)))
        .isEqualTo(THREADS * TRANSACTIONS_PER_THREAD);

    Map<UUID, Long> positions = new HashMap<>();
    for (OutboxEventsRecord row : stored) {
      positions.put(row.getId(), row.getPosition());
      assertThat(row.getId().version()).isEqualTo(7);
      assertThat(Ids.epochMillis(row.getId())).isBetween(startMillis, endMillis);
    }
    for (List<UUID> ids : idsByThread) {
      assertThat(positions).containsKeys(ids.toArray(UUID[]::new));
      assertThat(ids).isSorted();
      assertThat(ids.stream().map(positions::get).toList()).isSorted();
    }
  }

  /**
   * With serialized writers, each transaction, right after its append (holding the aggregate's
   * lock), counts the aggregate's events it can see: all committed before it, plus its own. If
   * position order is commit order, that count is exactly the event's rank by position: 1, 2, 3...
   * with no gap and no repeat. Without serialization two writers in flight see the same count.
   */
  @Test
  void serializedWritersOfOneAggregateCommitInPositionOrder() throws Exception {
    Outbox outbox = Outbox.builder().schema(db.schema()).serializeWritersPerAggregate(true).build();
    int threads = 4;
    int transactions = 100;
    List<String> aggregates = List.of("acct-1", "acct-2");
    CountDownLatch start = new CountDownLatch(1);
    List<Future<?>> writers = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      int thread = t;
      writers.add(
          executor.submit(
              () -> {
                start.await();
                for (int i = 0; i < transactions; i++) {
                  String aggregate = aggregates.get((thread + i) % aggregates.size());
                  host.transaction(
                      tx -> {
                        UUID id =
                            outbox.append(
                                tx.dsl(),
                                OutboxEvent.of("account", aggregate, "account.moved", Map.of()));
                        tx.dsl()
                            .execute(
                                "INSERT INTO ledger SELECT ?, count(*), ? FROM outbox_events"
                                    + " WHERE aggregate_type = 'account' AND aggregate_id = ?",
                                aggregate,
                                id,
                                aggregate);
                      });
                }
                return null;
              }));
    }
    start.countDown();
    for (Future<?> writer : writers) {
      writer.get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
    }

    for (String aggregate : aggregates) {
      List<Long> seqsInPositionOrder =
          db.dsl()
              .fetch(
                  "SELECT l.seq FROM ledger l JOIN outbox_events e ON e.id = l.event_id"
                      + " WHERE e.aggregate_id = ? ORDER BY e.position",
                  aggregate)
              .getValues(0, Long.class);
      assertThat(seqsInPositionOrder).hasSize(threads * transactions / aggregates.size());
      for (int rank = 1; rank <= seqsInPositionOrder.size(); rank++) {
        assertThat(seqsInPositionOrder.get(rank - 1)).as("rank " + rank).isEqualTo(rank);
      }
    }
    Record2<Integer, Integer> totals =
        db.dsl()
            .select(DSL.count(), DSL.countDistinct(DSL.field("event_id")))
            .from("ledger")
            .fetchSingle();
    assertThat(totals.value1()).isEqualTo(totals.value2()).isEqualTo(threads * transactions);
  }
}

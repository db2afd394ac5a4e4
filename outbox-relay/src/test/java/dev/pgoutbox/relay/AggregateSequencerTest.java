package dev.pgoutbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class AggregateSequencerTest {

  /** A fake broker: records each send and hands back a future the test completes by hand. */
  static final class FakeBroker implements AggregateSequencer.Send {
    final Map<String, CompletableFuture<PublishResult>> pending = new LinkedHashMap<>();
    final List<String> sent = new ArrayList<>();

    @Override
    public synchronized CompletableFuture<PublishResult> send(OutboxMessage m) {
      String name = name(m);
      sent.add(name);
      CompletableFuture<PublishResult> f = new CompletableFuture<>();
      pending.put(name, f);
      return f;
    }

    void ack(String name) {
      future(name).complete(PublishResult.published());
    }

    void answer(String name, PublishResult result) {
      future(name).complete(result);
    }

    synchronized CompletableFuture<PublishResult> future(String name) {
      CompletableFuture<PublishResult> f = pending.get(name);
      assertThat(f).as("%s was sent", name).isNotNull();
      return f;
    }

    synchronized List<String> sent() {
      return List.copyOf(sent);
    }
  }

  static OutboxMessage event(String aggregate, int seq) {
    return new OutboxMessage(
        UUID.randomUUID(),
        seq,
        "order",
        aggregate,
        "order.step",
        "{\"seq\":" + seq + "}",
        Map.of(),
        1,
        Instant.EPOCH);
  }

  static String name(OutboxMessage m) {
    return m.aggregateId() + m.position();
  }

  static List<OutboxMessage> batch(String... names) {
    List<OutboxMessage> batch = new ArrayList<>();
    for (String n : names) {
      batch.add(event(n.substring(0, 1), Integer.parseInt(n.substring(1))));
    }
    return batch;
  }

  @Test
  void firstEventOfEveryAggregateGoesOutAtOnceAndTheNextOnlyAfterItsAck() throws Exception {
    FakeBroker broker = new FakeBroker();
    AggregateSequencer.Run run =
        AggregateSequencer.ofDefaults().publish(batch("A1", "A2", "A3", "B1", "B2", "C1"), broker);

    assertThat(broker.sent()).containsExactly("A1", "B1", "C1");
    broker.ack("B1"); // out of order: B's ack before A's
    assertThat(broker.sent()).containsExactly("A1", "B1", "C1", "B2");
    broker.ack("C1");
    broker.ack("B2");
    assertThat(run).isNotDone();
    broker.ack("A1");
    assertThat(broker.sent()).endsWith("A2");
    broker.ack("A2");
    broker.ack("A3");

    assertThat(run.get(1, TimeUnit.SECONDS))
        .hasSize(6)
        .allSatisfy(r -> assertThat(r).isEqualTo(PublishResult.published()));
    assertThat(broker.sent()).containsExactly("A1", "B1", "C1", "B2", "A2", "A3");
  }

  @Test
  void aFailureHoldsBackTheRestOfItsAggregateOnly() throws Exception {
    FakeBroker broker = new FakeBroker();
    List<OutboxMessage> batch = batch("A1", "A2", "A3", "B1", "B2");
    AggregateSequencer.Run run = AggregateSequencer.ofDefaults().publish(batch, broker);

    broker.ack("A1");
    broker.answer("A2", PublishResult.permanent("unroutable"));
    broker.ack("B1");
    broker.ack("B2");

    List<PublishResult> results = run.get(1, TimeUnit.SECONDS);
    assertThat(broker.sent()).containsExactly("A1", "B1", "A2", "B2");
    assertThat(results.get(0)).isEqualTo(PublishResult.published());
    assertThat(results.get(1)).isEqualTo(PublishResult.permanent("unroutable"));
    assertThat(results.get(2))
        .isInstanceOfSatisfying(
            PublishResult.Retryable.class,
            r ->
                assertThat(r.reason())
                    .startsWith("held back: an earlier event of aggregate order/A failed")
                    .contains(batch.get(1).id().toString())
                    .contains("unroutable"));
    assertThat(results.subList(3, 5)).containsOnly(PublishResult.published());
  }

  @Test
  void aRetryableAnswerHoldsBackLikeAPermanentOne() throws Exception {
    FakeBroker broker = new FakeBroker();
    AggregateSequencer.Run run = AggregateSequencer.ofDefaults().publish(batch("A1", "A2"), broker);
    broker.answer("A1", PublishResult.retryable("nack"));
    assertThat(run.get(1, TimeUnit.SECONDS).get(1)).isInstanceOf(PublishResult.Retryable.class);
    assertThat(broker.sent()).containsExactly("A1");
  }

  @Test
  void whatTheSendFunctionThrowsOrFailsWithIsThatEventsRetryableAnswerNotTheBatchs()
      throws Exception {
    List<OutboxMessage> batch = batch("A1", "A2", "B1", "B2", "C1", "D1", "E1");
    List<String> sent = new ArrayList<>();
    AggregateSequencer.Run run =
        AggregateSequencer.ofDefaults()
            .publish(
                batch,
                m -> {
                  String n = name(m);
                  sent.add(n);
                  return switch (n) {
                    case "A1" -> throw new IllegalStateException("encoder blew up");
                    case "B1" -> CompletableFuture.failedFuture(new java.io.IOException("reset"));
                    case "C1" -> null;
                    case "D1" -> CompletableFuture.completedFuture(null);
                    default -> CompletableFuture.completedFuture(PublishResult.published());
                  };
                });

    List<PublishResult> results = run.get(1, TimeUnit.SECONDS);
    assertThat(sent).containsExactly("A1", "B1", "C1", "D1", "E1");
    assertThat(((PublishResult.Retryable) results.get(0)).reason())
        .contains("encoder blew up")
        .contains(batch.get(0).id().toString());
    assertThat(((PublishResult.Retryable) results.get(1)).reason()).startsWith("held back");
    assertThat(((PublishResult.Retryable) results.get(2)).reason()).contains("reset");
    assertThat(((PublishResult.Retryable) results.get(3)).reason()).startsWith("held back");
    assertThat(results.get(4)).isInstanceOf(PublishResult.Retryable.class);
    assertThat(results.get(5)).isInstanceOf(PublishResult.Retryable.class);
    assertThat(results.get(6)).isEqualTo(PublishResult.published());
  }

  @Test
  void answeredSoFarShowsArrivedAnswersAndNullForTheRest() {
    FakeBroker broker = new FakeBroker();
    AggregateSequencer.Run run =
        AggregateSequencer.ofDefaults().publish(batch("A1", "A2", "B1", "B2", "C1", "C2"), broker);
    broker.ack("A1");
    broker.answer("B1", PublishResult.retryable("timeout"));

    List<PublishResult> soFar = run.answeredSoFar();
    assertThat(soFar.get(0)).isEqualTo(PublishResult.published());
    assertThat(soFar.get(1)).isNull(); // A2 in flight
    assertThat(soFar.get(2)).isEqualTo(PublishResult.retryable("timeout"));
    assertThat(soFar.get(3)).isInstanceOf(PublishResult.Retryable.class); // held back
    assertThat(soFar.get(4)).isNull(); // C1 in flight
    assertThat(soFar.get(5)).isNull(); // C2 not sent
    assertThat(run).isNotDone();
    assertThatThrownBy(() -> soFar.set(0, null)).isInstanceOf(UnsupportedOperationException.class);
  }

  @Test
  void cancelStopsSendingForRealAndCancelsTheSendsInFlight() {
    FakeBroker broker = new FakeBroker();
    AggregateSequencer.Run run =
        AggregateSequencer.ofDefaults().publish(batch("A1", "A2", "B1", "B2", "C1"), broker);
    broker.ack("C1");
    CompletableFuture<PublishResult> a1 = broker.future("A1");
    CompletableFuture<PublishResult> b1 = broker.future("B1");

    assertThat(run.cancel(true)).isTrue();

    assertThat(run).isCancelled();
    assertThat(a1).isCancelled();
    assertThat(b1).isCancelled();
    // An answer that arrives anyway (the client could not abandon the send) sends nothing more.
    broker.pending.put("A1", new CompletableFuture<>());
    broker.ack("A1");
    assertThat(broker.sent()).containsExactly("A1", "B1", "C1");
    List<PublishResult> soFar = run.answeredSoFar();
    assertThat(soFar.get(4)).isEqualTo(PublishResult.published());
    assertThat(soFar.subList(0, 4)).containsOnlyNulls();
  }

  @Test
  void completingTheRunFromOutsideStopsItToo() {
    FakeBroker broker = new FakeBroker();
    AggregateSequencer.Run run = AggregateSequencer.ofDefaults().publish(batch("A1", "A2"), broker);
    run.completeExceptionally(new java.util.concurrent.TimeoutException("publish timeout"));
    assertThat(broker.future("A1")).isCancelled();
    assertThat(broker.sent()).containsExactly("A1");
  }

  @Test
  void aSendStageCancelledByTheClientItselfIsARetryableAnswer() throws Exception {
    AggregateSequencer.Run run =
        AggregateSequencer.ofDefaults()
            .publish(
                batch("A1", "A2"),
                m -> {
                  CompletableFuture<PublishResult> f = new CompletableFuture<>();
                  f.cancel(false);
                  return f;
                });
    List<PublishResult> results = run.get(1, TimeUnit.SECONDS);
    assertThat(results).allSatisfy(r -> assertThat(r).isInstanceOf(PublishResult.Retryable.class));
  }

  @Test
  void maxInFlightBoundsTheAggregatesInFlightAndFinishesStartedOnesFirst() throws Exception {
    FakeBroker broker = new FakeBroker();
    AggregateSequencer.Run run =
        AggregateSequencer.builder()
            .maxInFlight(2)
            .build()
            .publish(batch("A1", "A2", "B1", "C1", "D1"), broker);
    assertThat(broker.sent()).containsExactly("A1", "B1");
    broker.ack("A1");
    assertThat(broker.sent()).containsExactly("A1", "B1", "A2");
    broker.ack("B1");
    assertThat(broker.sent()).containsExactly("A1", "B1", "A2", "C1");
    broker.ack("A2");
    broker.ack("C1");
    broker.ack("D1");
    assertThat(run.get(1, TimeUnit.SECONDS)).containsOnly(PublishResult.published());
  }

  @Test
  void withAnExecutorEverySendRunsThereAndPublishReturnsAtOnce() throws Exception {
    ArrayDeque<Runnable> tasks = new ArrayDeque<>();
    FakeBroker broker = new FakeBroker();
    AggregateSequencer.Run run =
        AggregateSequencer.builder()
            .executor(tasks::add)
            .build()
            .publish(batch("A1", "A2", "B1"), broker);
    assertThat(broker.sent()).isEmpty();
    tasks.poll().run();
    assertThat(broker.sent()).containsExactly("A1", "B1");
    broker.ack("A1"); // on the "I/O thread": only schedules the next send
    assertThat(broker.sent()).containsExactly("A1", "B1");
    tasks.poll().run();
    assertThat(broker.sent()).containsExactly("A1", "B1", "A2");
    broker.ack("A2");
    broker.ack("B1");
    assertThat(tasks).isEmpty();
    assertThat(run.get(1, TimeUnit.SECONDS)).containsOnly(PublishResult.published());
  }

  @Test
  void anExecutorThatRefusesWorkAnswersRetryableInsteadOfHanging() throws Exception {
    ExecutorService closed = Executors.newSingleThreadExecutor();
    closed.shutdown();
    AggregateSequencer.Run run =
        AggregateSequencer.builder()
            .executor(closed)
            .build()
            .publish(batch("A1", "B1"), m -> CompletableFuture.failedFuture(new AssertionError()));
    assertThat(run.get(1, TimeUnit.SECONDS))
        .allSatisfy(
            r -> assertThat(((PublishResult.Retryable) r).reason()).contains("executor refused"));
  }

  @Test
  void aLongRunOfOneAggregateAnsweredSynchronouslyDoesNotRecurse() throws Exception {
    List<OutboxMessage> batch = new ArrayList<>();
    for (int i = 1; i <= 20_000; i++) {
      batch.add(event("A", i));
    }
    List<PublishResult> results =
        AggregateSequencer.ofDefaults()
            .publish(batch, m -> CompletableFuture.completedFuture(PublishResult.published()))
            .get(10, TimeUnit.SECONDS);
    assertThat(results).hasSize(20_000).containsOnly(PublishResult.published());
  }

  @Test
  void anEmptyBatchIsDoneAtOnce() throws Exception {
    assertThat(
            AggregateSequencer.ofDefaults()
                .publish(List.of(), m -> new CompletableFuture<>())
                .get(1, TimeUnit.SECONDS))
        .isEmpty();
  }

  @Test
  void refusesAMaxInFlightBelowOne() {
    assertThatThrownBy(() -> AggregateSequencer.builder().maxInFlight(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("maxInFlight must be at least 1, was 0");
  }

  /**
   * Random batches answered in random order, from several threads, with random outcomes: never two
   * events of one aggregate in flight, never N+1 sent unless N was published, every event sent at
   * most once, and the results say exactly that.
   */
  @Test
  void randomInterleavingsNeverBreakTheRule() throws Exception {
    Random random = new Random(13);
    ExecutorService answerers = Executors.newFixedThreadPool(4);
    try {
      for (int round = 0; round < 300; round++) {
        int aggregates = 1 + random.nextInt(6);
        List<OutboxMessage> batch = new ArrayList<>();
        Map<String, Integer> seq = new HashMap<>();
        int size = 1 + random.nextInt(30);
        for (int i = 0; i < size; i++) {
          String a = "" + (char) ('A' + random.nextInt(aggregates));
          batch.add(event(a, seq.merge(a, 1, Integer::sum)));
        }
        long seed = random.nextLong();
        Set<String> inFlight = java.util.concurrent.ConcurrentHashMap.newKeySet();
        Map<String, PublishResult> outcome = new java.util.concurrent.ConcurrentHashMap<>();
        ConcurrentLinkedQueue<String> violations = new ConcurrentLinkedQueue<>();
        ConcurrentLinkedQueue<String> sent = new ConcurrentLinkedQueue<>();
        CountDownLatch go = new CountDownLatch(1);
        AggregateSequencer.Run run =
            AggregateSequencer.builder()
                .maxInFlight(1 + random.nextInt(4))
                .build()
                .publish(
                    batch,
                    m -> {
                      String a = m.aggregateId();
                      int n = (int) m.position();
                      if (!inFlight.add(a)) {
                        violations.add("two in flight for " + a);
                      }
                      if (n > 1 && !(outcome.get(a + (n - 1)) instanceof PublishResult.Published)) {
                        violations.add(a + n + " sent before " + a + (n - 1) + " was published");
                      }
                      if (outcome.containsKey(a + n) || sent.contains(a + n)) {
                        violations.add(a + n + " sent twice");
                      }
                      sent.add(a + n);
                      Random r = new Random(seed ^ (a.hashCode() * 31L + n));
                      int roll = r.nextInt(10);
                      PublishResult result =
                          roll < 7
                              ? PublishResult.published()
                              : roll < 9
                                  ? PublishResult.retryable("nack")
                                  : PublishResult.permanent("too large");
                      CompletableFuture<PublishResult> f = new CompletableFuture<>();
                      Runnable complete =
                          () -> {
                            outcome.put(a + n, result);
                            inFlight.remove(a);
                            f.complete(result);
                          };
                      if (r.nextBoolean()) {
                        complete.run();
                      } else {
                        answerers.execute(
                            () -> {
                              try {
                                go.await();
                              } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                              }
                              complete.run();
                            });
                      }
                      return f;
                    });
        go.countDown();
        List<PublishResult> results = run.get(10, TimeUnit.SECONDS);
        assertThat(violations).as("round %d", round).isEmpty();
        Set<String> failed = new HashSet<>();
        for (int i = 0; i < batch.size(); i++) {
          OutboxMessage m = batch.get(i);
          String key = m.aggregateId() + m.position();
          if (failed.contains(m.aggregateId())) {
            assertThat(sent).doesNotContain(key);
            assertThat(((PublishResult.Retryable) results.get(i)).reason()).startsWith("held back");
          } else {
            assertThat(results.get(i)).isEqualTo(outcome.get(key));
            if (!(results.get(i) instanceof PublishResult.Published)) {
              failed.add(m.aggregateId());
            }
          }
        }
      }
    } finally {
      answerers.shutdownNow();
    }
  }

  @Test
  void aCancelledRunThrowsCancellationFromGet() {
    AggregateSequencer.Run run =
        AggregateSequencer.ofDefaults().publish(batch("A1"), m -> new CompletableFuture<>());
    run.cancel(false);
    assertThatThrownBy(() -> run.get(1, TimeUnit.SECONDS))
        .isInstanceOf(CancellationException.class);
  }
}

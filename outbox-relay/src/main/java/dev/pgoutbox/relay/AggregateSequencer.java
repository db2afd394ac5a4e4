package dev.pgoutbox.relay;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.relay.internal.Failures;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import org.jspecify.annotations.Nullable;

/**
 * The per-aggregate ordering rule of every {@link Publisher}, written once: within an aggregate
 * ({@code aggregate_type, aggregate_id}), an event is handed to the broker only once the event
 * before it was acknowledged ({@link PublishResult.Published}); across aggregates everything is
 * pipelined (the first event of every aggregate goes out at once, up to {@link
 * Builder#maxInFlight}).
 *
 * <p>When an event is not published (retryable or permanent failure), the later events of its
 * aggregate in the batch are not sent: each is answered {@link PublishResult.Retryable} with the
 * reason {@code "held back: an earlier event of aggregate <type>/<id> failed (<event id>: <its
 * reason>)"}. So a broker never stores event N+1 of an aggregate after refusing, losing or
 * returning event N, whatever the broker does with messages sent behind a failed one.
 *
 * <pre>{@code
 * public final class MyPublisher implements Publisher {
 *   private final AggregateSequencer sequencer = AggregateSequencer.ofDefaults();
 *
 *   public CompletionStage<List<PublishResult>> publish(List<OutboxMessage> batch) {
 *     return sequencer.publish(batch, m -> client.sendAsync(m).thenApply(ack -> PublishResult.published()));
 *   }
 * }
 * }</pre>
 *
 * <p><b>The send function</b> is called once per event that is to go out, never twice for one
 * event, never for two events of one aggregate at once. It should turn what it cannot send (too
 * long, unroutable, not encodable) into that event's {@link PublishResult.Permanent} itself; an
 * exception it throws, a {@code null} stage, or a stage completed exceptionally becomes that
 * event's {@link PublishResult.Retryable} answer (the relay dead-letters it after its maximum
 * attempts), never a failure of the batch. A stage that never completes leaves its event
 * unanswered: give every send its own timeout.
 *
 * <p><b>Threads.</b> Without an {@link Builder#executor executor}, the first events are sent on the
 * thread that calls {@link #publish}, and each later event on the thread that completed the stage
 * of the event before it (a broker client's I/O thread, typically). Give an executor when the send
 * function may block or when the client forbids calls from its own callback threads (the Kafka
 * producer, an AMQP connection): then every send runs on it, one at a time per batch, and {@code
 * publish} returns at once. An instance is immutable and thread-safe; one instance serves any
 * number of batches at once.
 */
public final class AggregateSequencer {

  /** No limit on the aggregates in flight at once, the default. */
  public static final int UNBOUNDED = Integer.MAX_VALUE;

  private final int maxInFlight;
  private final @Nullable Executor executor;

  private AggregateSequencer(Builder b) {
    this.maxInFlight = b.maxInFlight;
    this.executor = b.executor;
  }

  /** A sequencer with no limit on aggregates in flight, sending on the calling threads. */
  public static AggregateSequencer ofDefaults() {
    return builder().build();
  }

  /** A builder of a sequencer with other settings. */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Sends {@code batch} through {@code send} under the ordering rule and returns the run, a stage
   * completed with one result per event in batch order once every event is answered. Return the run
   * itself from {@link Publisher#publish} (not a stage derived from it), so that the relay can
   * {@link Run#cancel cancel} it and keep its {@link Run#answeredSoFar partial answers}.
   *
   * @param batch the events in publishing order (within an aggregate, the order written)
   * @param send sends one event and reports its fate
   */
  public Run publish(List<OutboxMessage> batch, Send send) {
    Run run = new Run(List.copyOf(batch), requireNonNull(send, "send"), maxInFlight, executor);
    run.start();
    return run;
  }

  /** Sends one event. */
  @FunctionalInterface
  public interface Send {
    /**
     * Hands {@code message} to the broker.
     *
     * @return a stage completed with the event's result; cancelling it should abandon the send
     *     where the client allows it
     * @throws Exception a failure to send: becomes the event's retryable answer
     */
    CompletionStage<PublishResult> send(OutboxMessage message) throws Exception;
  }

  /**
   * One batch going through the sequencer: a {@link CompletableFuture} of the results, in batch
   * order, that also shows the answers that have arrived so far and stops sending when cancelled.
   *
   * <p>{@link #cancel} (or completing this future from outside in any way) stops the run for real:
   * no event is handed to the send function after it returns, and the stages of the sends in flight
   * are cancelled (a client that supports it abandons the request). A send function already running
   * on another thread when {@code cancel} is called may still finish its call; its stage is
   * cancelled as soon as it returns.
   */
  public static final class Run extends CompletableFuture<List<PublishResult>>
      implements PartialResults {
    private final List<OutboxMessage> batch;
    private final Send send;
    private final int maxInFlight;
    private final @Nullable Executor executor;
    private final ReentrantLock lock = new ReentrantLock();
    private final @Nullable PublishResult[] results;
    private final Aggregate[] aggregateOf;
    private final ArrayDeque<Aggregate> ready = new ArrayDeque<>();
    private final Map<Integer, CompletableFuture<PublishResult>> inFlight = new HashMap<>();
    private final AtomicInteger drainRequests = new AtomicInteger();
    private int answered;
    private int aggregatesInFlight;
    private boolean stopped;
    private boolean finished;

    private Run(
        List<OutboxMessage> batch, Send send, int maxInFlight, @Nullable Executor executor) {
      this.batch = batch;
      this.send = send;
      this.maxInFlight = maxInFlight;
      this.executor = executor;
      this.results = new PublishResult[batch.size()];
      this.aggregateOf = new Aggregate[batch.size()];
      Map<List<String>, List<Integer>> byAggregate = new LinkedHashMap<>();
      for (int i = 0; i < batch.size(); i++) {
        OutboxMessage m = batch.get(i);
        byAggregate
            .computeIfAbsent(List.of(m.aggregateType(), m.aggregateId()), k -> new ArrayList<>())
            .add(i);
      }
      for (List<Integer> indices : byAggregate.values()) {
        Aggregate a = new Aggregate(indices.stream().mapToInt(Integer::intValue).toArray());
        for (int i : a.indices) {
          aggregateOf[i] = a;
        }
        ready.add(a);
      }
      // Anything that completes this future from outside (cancel, a timeout, complete()) stops it.
      super.whenComplete((r, e) -> stop());
    }

    /**
     * The answers that have arrived so far, in batch order, with {@code null} for each event not
     * answered yet (in flight, or not sent). Held-back events count as answered. A snapshot: later
     * answers do not change the returned list.
     */
    @Override
    public List<@Nullable PublishResult> answeredSoFar() {
      lock.lock();
      try {
        return Collections.unmodifiableList(Arrays.asList(results.clone()));
      } finally {
        lock.unlock();
      }
    }

    /**
     * Stops the run: sends nothing more, cancels the sends in flight, and completes this future
     * with a {@link CancellationException}. {@link #answeredSoFar()} still shows what was answered.
     */
    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
      boolean cancelled = super.cancel(mayInterruptIfRunning);
      stop();
      return cancelled;
    }

    @Override
    public <U> CompletableFuture<U> newIncompleteFuture() {
      return new CompletableFuture<>();
    }

    private void start() {
      if (batch.isEmpty()) {
        finish();
        return;
      }
      drain();
    }

    private void stop() {
      List<CompletableFuture<PublishResult>> toCancel;
      lock.lock();
      try {
        if (stopped) {
          return;
        }
        stopped = true;
        ready.clear();
        toCancel = new ArrayList<>(inFlight.values());
        inFlight.clear();
      } finally {
        lock.unlock();
      }
      toCancel.forEach(f -> f.cancel(true));
    }

    /** Sends what may go out; one thread at a time drains, others only ask it to go on. */
    private void drain() {
      if (drainRequests.getAndIncrement() != 0) {
        return;
      }
      Executor e = executor;
      if (e == null) {
        drainLoop();
        return;
      }
      try {
        e.execute(this::drainLoop);
      } catch (RejectedExecutionException x) {
        abandon("not sent: the publisher's executor refused the work (" + x.getMessage() + ")");
      }
    }

    private void drainLoop() {
      int missed = 1;
      do {
        while (true) {
          int index;
          lock.lock();
          try {
            if (stopped || ready.isEmpty() || aggregatesInFlight >= maxInFlight) {
              break;
            }
            Aggregate a = ready.poll();
            index = a.indices[a.next];
            aggregatesInFlight++;
          } finally {
            lock.unlock();
          }
          dispatch(index);
        }
        missed = drainRequests.addAndGet(-missed);
      } while (missed != 0);
    }

    private void dispatch(int index) {
      OutboxMessage m = batch.get(index);
      CompletionStage<PublishResult> stage;
      try {
        stage = send.send(m);
      } catch (Exception | LinkageError | AssertionError e) {
        answer(index, PublishResult.retryable("send failed for event " + m.id() + ": " + e));
        return;
      }
      if (stage == null) {
        answer(index, PublishResult.retryable("send answered null for event " + m.id()));
        return;
      }
      CompletableFuture<PublishResult> future;
      try {
        future = stage.toCompletableFuture();
      } catch (UnsupportedOperationException e) {
        future = new CompletableFuture<>();
        CompletableFuture<PublishResult> copy = future;
        stage.whenComplete((r, x) -> copy.complete(r));
      }
      boolean cancelNow;
      lock.lock();
      try {
        cancelNow = stopped;
        if (!cancelNow && !future.isDone()) {
          inFlight.put(index, future);
        }
      } finally {
        lock.unlock();
      }
      if (cancelNow) {
        future.cancel(true);
      }
      future.whenComplete((r, e) -> completed(index, m, r, e));
    }

    private void completed(
        int index, OutboxMessage m, @Nullable PublishResult r, @Nullable Throwable e) {
      if (e != null) {
        Throwable cause = Failures.unwrap(e);
        if (cause instanceof CancellationException) {
          lock.lock();
          try {
            if (stopped) {
              // Cancelled by stop(): the event stays unanswered.
              inFlight.remove(index);
              return;
            }
          } finally {
            lock.unlock();
          }
        }
        answer(index, PublishResult.retryable("send failed for event " + m.id() + ": " + cause));
      } else if (r == null) {
        answer(index, PublishResult.retryable("send completed with null for event " + m.id()));
      } else {
        answer(index, r);
      }
    }

    /** Records one event's answer, moves its aggregate on, and finishes the run when all are in. */
    private void answer(int index, PublishResult result) {
      boolean more;
      boolean last;
      lock.lock();
      try {
        inFlight.remove(index);
        if (results[index] != null) {
          return;
        }
        results[index] = result;
        answered++;
        Aggregate a = aggregateOf[index];
        aggregatesInFlight--;
        if (!stopped) {
          a.next++;
          switch (result) {
            case PublishResult.Published p -> {
              if (a.next < a.indices.length) {
                // Keep a started aggregate moving: its next event goes before new aggregates.
                ready.addFirst(a);
              }
            }
            case PublishResult.Retryable r -> holdBackRest(a, batch.get(index), r.reason());
            case PublishResult.Permanent p -> holdBackRest(a, batch.get(index), p.reason());
          }
        }
        last = answered == results.length;
        more = !stopped && !ready.isEmpty();
      } finally {
        lock.unlock();
      }
      if (last) {
        finish();
      } else if (more) {
        drain();
      }
    }

    /** Answers the rest of {@code a} retryable, held back behind {@code failed}; under the lock. */
    private void holdBackRest(Aggregate a, OutboxMessage failed, String reason) {
      PublishResult held =
          PublishResult.retryable(
              "held back: an earlier event of aggregate "
                  + failed.aggregateType()
                  + "/"
                  + failed.aggregateId()
                  + " failed ("
                  + failed.id()
                  + ": "
                  + reason
                  + ")");
      for (int later = a.next; later < a.indices.length; later++) {
        if (results[a.indices[later]] == null) {
          results[a.indices[later]] = held;
          answered++;
        }
      }
      a.next = a.indices.length;
    }

    /** The executor refused the drain: every event not answered yet is answered retryable. */
    private void abandon(String reason) {
      lock.lock();
      try {
        stopped = true;
        ready.clear();
        for (int i = 0; i < results.length; i++) {
          if (results[i] == null && !inFlight.containsKey(i)) {
            results[i] = PublishResult.retryable(reason);
            answered++;
          }
        }
      } finally {
        lock.unlock();
      }
      drainRequests.set(0);
      if (answeredAll()) {
        finish();
      }
    }

    private boolean answeredAll() {
      lock.lock();
      try {
        return answered == results.length;
      } finally {
        lock.unlock();
      }
    }

    private void finish() {
      List<PublishResult> all;
      lock.lock();
      try {
        if (finished) {
          return;
        }
        finished = true;
        // Not stop(): nothing is in flight, and a finished run keeps nothing to cancel.
        stopped = true;
        all = new ArrayList<>(results.length);
        for (PublishResult r : results) {
          all.add(requireNonNull(r));
        }
      } finally {
        lock.unlock();
      }
      super.complete(Collections.unmodifiableList(all));
    }

    /** One aggregate's events in the batch, and the next one to send. */
    private static final class Aggregate {
      final int[] indices;
      int next;

      Aggregate(int[] indices) {
        this.indices = indices;
      }
    }
  }

  /** Settings of an {@link AggregateSequencer}. Not thread-safe. */
  public static final class Builder {
    private int maxInFlight = UNBOUNDED;
    private @Nullable Executor executor;

    private Builder() {}

    /**
     * How many aggregates may have an event in flight at once (each has at most one). At least 1,
     * default {@link #UNBOUNDED}. Aggregates already started go before new ones when a slot frees.
     */
    public Builder maxInFlight(int max) {
      if (max < 1) {
        throw new IllegalArgumentException("maxInFlight must be at least 1, was " + max);
      }
      this.maxInFlight = max;
      return this;
    }

    /**
     * Runs every call of the send function on {@code executor} instead of the calling threads (see
     * the class comment). Default: none.
     */
    public Builder executor(Executor executor) {
      this.executor = requireNonNull(executor, "executor");
      return this;
    }

    /** A sequencer with these settings. */
    public AggregateSequencer build() {
      return new AggregateSequencer(this);
    }
  }
}

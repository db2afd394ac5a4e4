package dev.pgoutbox.relay.testing;

import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.Publisher;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * A test double of the {@link Publisher} SPI that records what it "delivers", in delivery order. It
 * keeps the SPI's per-aggregate contract like a real broker client: once an event of an aggregate
 * fails in a batch, the later events of that aggregate in the batch are not delivered.
 */
public final class RecordingPublisher implements Publisher {

  private final ConcurrentLinkedQueue<OutboxMessage> delivered = new ConcurrentLinkedQueue<>();
  private final ConcurrentLinkedQueue<List<OutboxMessage>> batches = new ConcurrentLinkedQueue<>();
  private volatile Function<OutboxMessage, PublishResult> decision = m -> PublishResult.published();
  private volatile CountDownLatch gate;
  private volatile CountDownLatch entered = new CountDownLatch(1);
  private volatile boolean neverAnswer;

  /** Decides each event's fate (default: published). */
  public RecordingPublisher decide(Function<OutboxMessage, PublishResult> decision) {
    this.decision = decision;
    return this;
  }

  /** Blocks every publish call until {@link #open()} (to hold a batch in flight). */
  public RecordingPublisher closeGate() {
    this.gate = new CountDownLatch(1);
    this.entered = new CountDownLatch(1);
    return this;
  }

  /** Lets blocked publish calls go on. */
  public void open() {
    CountDownLatch current = gate;
    gate = null;
    if (current != null) {
      current.countDown();
    }
  }

  /** Returns a stage that never completes, to exercise the publish timeout. */
  public RecordingPublisher neverAnswer() {
    this.neverAnswer = true;
    return this;
  }

  /** Waits until a publish call has started (and is blocked at the gate, if closed). */
  public boolean awaitEntered(long seconds) throws InterruptedException {
    return entered.await(seconds, TimeUnit.SECONDS);
  }

  @Override
  public CompletionStage<List<PublishResult>> publish(List<OutboxMessage> batch) {
    entered.countDown();
    CountDownLatch current = gate;
    if (current != null) {
      try {
        current.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return CompletableFuture.failedFuture(e);
      }
    }
    if (neverAnswer) {
      return new CompletableFuture<>();
    }
    batches.add(List.copyOf(batch));
    List<PublishResult> results = new ArrayList<>(batch.size());
    Set<String> failedAggregates = new HashSet<>();
    for (OutboxMessage message : batch) {
      String aggregate = message.aggregateType() + "/" + message.aggregateId();
      if (failedAggregates.contains(aggregate)) {
        results.add(
            PublishResult.retryable("held back: an earlier event of this aggregate failed"));
        continue;
      }
      PublishResult result = decision.apply(message);
      if (result instanceof PublishResult.Published) {
        delivered.add(message);
      } else {
        failedAggregates.add(aggregate);
      }
      results.add(result);
    }
    return CompletableFuture.completedFuture(results);
  }

  /** Everything delivered so far, in delivery order. */
  public List<OutboxMessage> delivered() {
    return List.copyOf(delivered);
  }

  /** Every batch received that was answered, in order. */
  public List<List<OutboxMessage>> batches() {
    return List.copyOf(batches);
  }
}

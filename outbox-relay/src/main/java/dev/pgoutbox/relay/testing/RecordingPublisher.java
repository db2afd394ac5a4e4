package dev.pgoutbox.relay.testing;

import dev.pgoutbox.relay.AggregateSequencer;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.Publisher;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * A test double of the {@link Publisher} SPI that records what it "delivers", in delivery order,
 * for a host's tests of its relay set-up (and the relay's own tests). It sends through {@link
 * AggregateSequencer}, as every real publisher does, so it keeps the SPI's per-aggregate contract
 * by the same mechanism: once an event of an aggregate fails in a batch, the later events of that
 * aggregate in the batch are not delivered (answered retryable, "held back").
 *
 * <pre>{@code
 * RecordingPublisher publisher = new RecordingPublisher();
 * OutboxRelay relay = OutboxRelay.builder().dataSource(dataSource).publisher(publisher).build();
 * relay.start();
 * ... write events ...
 * Eventually.await("3 events published", () -> publisher.delivered().size() == 3);
 * }</pre>
 *
 * <p>{@link #decide} plays the broker: it is called once per event the sequencer sends, and what it
 * answers is that event's fate; an exception it throws is that event's retryable failure.
 *
 * <p>Thread-safe. It ships in the relay's jar rather than in {@code pgoutbox-testing} because the
 * relay's own tests use it, and {@code pgoutbox-testing} is below the relay.
 */
public final class RecordingPublisher implements Publisher {

  private final AggregateSequencer sequencer = AggregateSequencer.ofDefaults();
  private final ConcurrentLinkedQueue<OutboxMessage> delivered = new ConcurrentLinkedQueue<>();
  private final ConcurrentLinkedQueue<List<OutboxMessage>> batches = new ConcurrentLinkedQueue<>();
  private volatile Function<OutboxMessage, PublishResult> decision = m -> PublishResult.published();
  private volatile @Nullable CountDownLatch gate;
  private volatile CountDownLatch entered = new CountDownLatch(1);
  private volatile boolean neverAnswer;

  /** A publisher that delivers every event it is given. */
  public RecordingPublisher() {}

  /** Decides each event's fate (default: published); returns this publisher. */
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

  /**
   * Sends nothing and answers nothing: the first event of each aggregate is handed to a "broker"
   * that never acknowledges, so the batch's stage never completes (to exercise the publish timeout
   * and stop()).
   */
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
      return sequencer.publish(batch, m -> new CompletableFuture<>());
    }
    batches.add(List.copyOf(batch));
    Function<OutboxMessage, PublishResult> broker = decision;
    return sequencer.publish(batch, m -> CompletableFuture.completedFuture(deliver(broker, m)));
  }

  private PublishResult deliver(Function<OutboxMessage, PublishResult> broker, OutboxMessage m) {
    PublishResult result = broker.apply(m);
    if (result instanceof PublishResult.Published) {
      delivered.add(m);
    }
    return result;
  }

  /** Everything delivered so far, in delivery order. */
  public List<OutboxMessage> delivered() {
    return List.copyOf(delivered);
  }

  /** The payloads of everything delivered so far, in delivery order (for a delivery checker). */
  public List<String> deliveredPayloads() {
    return delivered().stream().map(OutboxMessage::payload).toList();
  }

  /** Every batch received that was answered, in order. */
  public List<List<OutboxMessage>> batches() {
    return List.copyOf(batches);
  }
}

package dev.pgoutbox.docs;

// snippet:start publisher
import dev.pgoutbox.relay.AggregateSequencer;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.Publisher;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * Publishes outbox events through an asynchronous {@link BrokerClient}: topic = aggregate type,
 * partition key = aggregate id, message id = event id, headers = the stored headers plus the
 * event's type, aggregate type and creation time.
 *
 * <pre>{@code
 * OutboxRelay relay = OutboxRelay.builder()
 *     .dataSource(pool)
 *     .publisher(new BrokerPublisher(client, Duration.ofSeconds(10)))
 *     .build();
 * }</pre>
 *
 * <p>Thread-safe and stateless: one instance may serve several relays. {@link #close()} leaves the
 * client open; the host created it and closes it.
 */
public final class BrokerPublisher implements Publisher {

  /** Longest "try again in" hint passed on to the relay; a longer one is cut to it. */
  public static final Duration MAX_RETRY_AFTER = Duration.ofMinutes(5);

  private final BrokerClient client;
  private final Duration ackTimeout;
  // The ordering rule, written once in pgoutbox: an aggregate's next event goes out only once
  // the broker acknowledged the one before it; different aggregates go out in parallel.
  private final AggregateSequencer sequencer = AggregateSequencer.ofDefaults();

  /**
   * A publisher sending through {@code client}.
   *
   * @param ackTimeout longest wait for one event's acknowledgement; keep it well below the relay's
   *     {@code publishTimeout}, so that a lost ack fails that event alone
   */
  public BrokerPublisher(BrokerClient client, Duration ackTimeout) {
    if (ackTimeout.isNegative() || ackTimeout.isZero()) {
      throw new IllegalArgumentException("ackTimeout must be positive, was " + ackTimeout);
    }
    this.client = client;
    this.ackTimeout = ackTimeout;
  }

  @Override
  public CompletionStage<List<PublishResult>> publish(List<OutboxMessage> batch) {
    // Return the run itself: at its publishTimeout (or on stop) the relay cancels it, and a
    // cancelled run sends nothing more and cancels the sends in flight.
    return sequencer.publish(batch, this::send);
  }

  /**
   * Sends one event. The sequencer calls it once per event, never for two events of one aggregate
   * at once. An exception thrown here (the client is closed) is this event's retryable failure.
   */
  private CompletableFuture<PublishResult> send(OutboxMessage event) {
    BrokerClient.Message message;
    try {
      message = toMessage(event);
    } catch (IllegalArgumentException e) {
      // The broker can never take this event: its own permanent failure, not the batch's.
      return CompletableFuture.completedFuture(
          PublishResult.permanent("cannot build the message: " + e.getMessage()));
    }
    CompletableFuture<Void> ack = client.send(message);
    CompletableFuture<PublishResult> result = new CompletableFuture<>();
    ack.whenComplete(
        (ok, error) -> result.complete(error == null ? PublishResult.published() : failure(error)));
    // An ack that never comes is this event's retryable failure after ackTimeout ...
    result.completeOnTimeout(
        PublishResult.retryable("no acknowledgement within " + ackTimeout),
        ackTimeout.toMillis(),
        TimeUnit.MILLISECONDS);
    // ... and once the answer is decided (or the relay cancelled the run), the request is dropped.
    result.whenComplete((r, e) -> ack.cancel(true));
    return result;
  }

  private static BrokerClient.Message toMessage(OutboxMessage event) {
    // The stored headers (trace context, correlation ids) first, then ours, which win.
    Map<String, String> headers = new LinkedHashMap<>(event.headers());
    headers.put("event_id", event.id().toString());
    headers.put("event_type", event.eventType());
    headers.put("aggregate_type", event.aggregateType());
    headers.put("created_at", event.createdAt().toString());
    return new BrokerClient.Message(
        event.aggregateType(), // topic: one per aggregate type
        event.aggregateId(), // key: one partition per aggregate, which keeps its order
        event.id().toString(), // message id: the broker's dedup key, as delivery is at least once
        headers,
        event.payloadBytes());
  }

  private static PublishResult failure(Throwable error) {
    Throwable cause =
        error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
    if (cause instanceof BrokerClient.Refused refused) {
      return refused.permanent()
          ? PublishResult.permanent("refused: " + refused.getMessage())
          : PublishResult.retryable(
              "refused: " + refused.getMessage(), bounded(refused.retryAfter()));
    }
    return PublishResult.retryable("send failed: " + cause);
  }

  /** The broker's hint, cut at {@link #MAX_RETRY_AFTER}; none when absent, zero or negative. */
  static @Nullable Duration bounded(@Nullable Duration hint) {
    if (hint == null || hint.isNegative() || hint.isZero()) {
      return null;
    }
    return hint.compareTo(MAX_RETRY_AFTER) > 0 ? MAX_RETRY_AFTER : hint;
  }

  /** Nothing to release: the client belongs to the host. */
  @Override
  public void close() {}
}
// snippet:end publisher

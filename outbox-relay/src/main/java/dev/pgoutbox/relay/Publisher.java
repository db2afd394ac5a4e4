package dev.pgoutbox.relay;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * Sends claimed events to a broker. The relay's only contact with the outside world.
 *
 * <p>The relay calls {@link #publish} with a batch in order: within one aggregate, in the order the
 * events were written. An implementation completes the returned stage with one {@link
 * PublishResult} per event, in batch order, and keeps this contract:
 *
 * <ul>
 *   <li><b>Order per aggregate.</b> Event N+1 of an aggregate reaches the broker only once event N
 *       was acknowledged; after N fails, N+1 and the rest of that aggregate in the batch are not
 *       sent and are answered retryable. Across aggregates everything is pipelined. {@link
 *       AggregateSequencer} implements this rule; every built-in publisher uses it, and a custom
 *       publisher (or a test double) should too.
 *   <li><b>One event's problem is that event's answer.</b> Whatever goes wrong while building or
 *       sending one event (a routing function that throws, a header or key the broker cannot
 *       encode, a message too large, unroutable) is that event's failure: {@link
 *       PublishResult.Permanent} when it can never succeed, {@link PublishResult.Retryable}
 *       otherwise. It is never an exception out of {@code publish} and never a failed stage: those
 *       count as a retryable failure of every event in the batch, so one bad event would keep the
 *       innocent ones of other aggregates from moving.
 *   <li><b>Partial answers and cancellation.</b> Return the {@link AggregateSequencer.Run} itself
 *       (or another stage whose {@code cancel} stops the work): on its publish timeout the relay
 *       cancels the stage, which must then send nothing more, and can keep the answers that arrived
 *       ({@link AggregateSequencer.Run#answeredSoFar()}).
 *   <li><b>Bounded hints.</b> A {@link PublishResult.Retryable#retryAfter()} hint taken from the
 *       broker is bounded by the publisher (e.g. {@code WebhookPublisher.MAX_RETRY_AFTER} of
 *       pgoutbox-webhook); never pass on an absurd {@code Duration}.
 * </ul>
 *
 * <p>An implementation sends the event id as the broker's deduplication key (Kafka header, AMQP
 * {@code message-id}, {@code Nats-Msg-Id}), because delivery is at least once: a relay that crashes
 * after the broker's ack and before its commit publishes the event again.
 *
 * <pre>{@code
 * AggregateSequencer sequencer = AggregateSequencer.ofDefaults();
 * Publisher printing = batch -> sequencer.publish(batch, m -> {
 *   System.out.println(m.eventType() + " " + m.id());
 *   return CompletableFuture.completedFuture(PublishResult.published());
 * });
 * }</pre>
 *
 * <p>One relay calls {@code publish} from one thread at a time; a publisher shared by several
 * relays must be thread-safe. {@link #close()} releases what the publisher created, never a client
 * the host passed in.
 */
@FunctionalInterface
public interface Publisher extends AutoCloseable {

  /**
   * Publishes {@code batch} and reports the fate of each event.
   *
   * @param batch events in publishing order, never empty
   * @return a stage completed with exactly {@code batch.size()} results, in batch order; best the
   *     {@link AggregateSequencer.Run} of the batch
   */
  CompletionStage<List<PublishResult>> publish(List<OutboxMessage> batch);

  /**
   * The broker's name in traces ({@code messaging.system}, see {@link PublishTracing}): {@code
   * kafka}, {@code rabbitmq}, {@code nats}, {@code webhook} for the built-in publishers. The
   * default, {@code pgoutbox}, is for custom publishers that do not say.
   */
  default String messagingSystem() {
    return "pgoutbox";
  }

  /**
   * Where {@code message} goes, for traces ({@code messaging.destination.name}): the Kafka topic,
   * the RabbitMQ exchange, the NATS subject, the webhook's host and path. Called only when tracing
   * is on; null (the default) when unknown. Must not throw.
   */
  default @Nullable String destination(OutboxMessage message) {
    return null;
  }

  /**
   * What this publisher knows before sending {@code message} that the OpenTelemetry messaging
   * conventions put on its publish span, beyond {@link #messagingSystem()} and {@link
   * #destination}: e.g. {@code messaging.kafka.message.key}, {@code server.address}, {@code
   * server.port}, {@code messaging.rabbitmq.destination.routing_key}. Values are {@code String},
   * {@code Long} or {@code Boolean}. What the broker says once it has the event (a partition)
   * travels in {@link PublishResult#published(Map)} instead. Called only when tracing is on; the
   * default is empty. Must not throw.
   */
  default Map<String, Object> traceAttributes(OutboxMessage message) {
    return Map.of();
  }

  /** Releases resources this publisher created. The default does nothing. */
  @Override
  default void close() {}
}

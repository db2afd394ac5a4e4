package dev.pgoutbox.relay;

import java.util.List;
import java.util.concurrent.CompletionStage;

/**
 * Sends claimed events to a broker. The relay's only contact with the outside world.
 *
 * <p>The relay calls {@link #publish} with a batch in order: within one aggregate, in the order the
 * events were written. An implementation sends the whole batch without waiting on each event
 * (pipelining), keeps the order of each aggregate's events on the wire (e.g. one partition per
 * aggregate id), and completes the returned stage with one {@link PublishResult} per event, in
 * batch order. An exception, or a stage completed exceptionally, counts as a retryable failure of
 * every event in the batch.
 *
 * <p>An implementation sends the event id as the broker's deduplication key (Kafka header, AMQP
 * {@code message-id}, {@code Nats-Msg-Id}), because delivery is at least once: a relay that crashes
 * after the broker's ack and before its commit publishes the event again.
 *
 * <pre>{@code
 * Publisher recording = batch -> {
 *   batch.forEach(m -> System.out.println(m.eventType() + " " + m.id()));
 *   return CompletableFuture.completedFuture(
 *       Collections.nCopies(batch.size(), PublishResult.published()));
 * };
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
   * @return a stage completed with exactly {@code batch.size()} results, in batch order
   */
  CompletionStage<List<PublishResult>> publish(List<OutboxMessage> batch);

  /** Releases resources this publisher created. The default does nothing. */
  @Override
  default void close() {}
}

package dev.pgoutbox.relay;

import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * What a publish stage can tell before it completes: the answers that already arrived. A {@link
 * Publisher} whose returned stage implements this lets the relay keep those answers when the batch
 * passes {@link RelayConfig#publishTimeout()}: events already acknowledged are marked published,
 * and only the unanswered head of each aggregate is charged an attempt.
 *
 * <p>On a timeout the relay cancels the stage ({@code toCompletableFuture().cancel(true)}), so that
 * an implementation stops sending what was not sent yet, and then reads {@link #answeredSoFar()}
 * once: answers recorded after the cancel are still kept. Without this interface, a timed-out batch
 * counts as unanswered as a whole. {@link AggregateSequencer.Run} implements it.
 *
 * <p>Implementations are called from the relay's thread while other threads may still be answering,
 * so they must be thread-safe.
 */
public interface PartialResults {

  /**
   * The answers so far, in batch order: exactly one element per event of the batch, {@code null}
   * where an event has no answer yet. A snapshot: later answers do not change the returned list.
   */
  List<@Nullable PublishResult> answeredSoFar();
}

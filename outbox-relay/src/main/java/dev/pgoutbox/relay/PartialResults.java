package dev.pgoutbox.relay;

import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * What a publish stage can tell before it completes: the answers that already arrived. A {@link
 * Publisher} whose returned stage implements this lets the relay keep those answers when the batch
 * passes {@link RelayConfig#publishTimeout()}: events already acknowledged are marked published,
 * and only the unanswered head of each aggregate is charged an attempt.
 *
 * <p>On a timeout the relay reads {@link #answeredSoFar()} once and then cancels the stage ({@code
 * toCompletableFuture().cancel(true)}): an implementation stops sending what was not sent yet.
 * Without this interface, a timed-out batch counts as unanswered as a whole.
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

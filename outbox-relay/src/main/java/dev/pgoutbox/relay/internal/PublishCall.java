package dev.pgoutbox.relay.internal;

import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PartialResults;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.Publisher;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;

/**
 * One call of the publisher, bounded by the publish timeout as a whole: the time spent inside
 * {@code publish()} (a client blocking on metadata or a resource alarm) counts, because the call
 * runs on a virtual thread of its own that is interrupted when the deadline passes. A stage still
 * incomplete at the deadline is cancelled; the answers it already has are kept when it implements
 * {@link PartialResults}.
 */
public final class PublishCall {

  private PublishCall() {}

  /**
   * The publisher's answers.
   *
   * @param results one per event, in batch order; {@code null} where no answer arrived in time
   * @param unansweredReason why an event has no answer, for its {@code last_error}
   */
  public record Answers(List<@Nullable PublishResult> results, String unansweredReason) {}

  /** Publishes {@code batch} and waits at most {@code timeout} for all of it. */
  public static Answers publish(
      Publisher publisher, List<OutboxMessage> batch, Duration timeout, RelayLog log)
      throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    CompletableFuture<CompletionStage<List<PublishResult>>> call = new CompletableFuture<>();
    Thread caller =
        Thread.ofVirtual()
            .name("pgoutbox-publish")
            .start(
                () -> {
                  try {
                    call.complete(publisher.publish(batch));
                  } catch (Throwable t) {
                    call.completeExceptionally(t);
                  }
                });
    CompletionStage<List<PublishResult>> stage;
    try {
      stage = call.get(remaining(deadline), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      caller.interrupt();
      return unanswered(batch.size(), "publish() did not return within " + timeout);
    } catch (ExecutionException e) {
      return failed(batch.size(), "publisher threw " + describe(e.getCause()));
    } catch (InterruptedException e) {
      caller.interrupt();
      throw e;
    }
    if (stage == null) {
      return failed(batch.size(), "publisher returned no stage");
    }
    CompletableFuture<List<PublishResult>> future = asFuture(stage);
    List<PublishResult> results;
    try {
      results = future.get(remaining(deadline), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      // Cancel first, so nothing more is sent, then keep every answer that arrived until now.
      future.cancel(true);
      List<@Nullable PublishResult> soFar = answeredSoFar(stage, batch.size(), log);
      return new Answers(soFar, "publish timed out after " + timeout);
    } catch (ExecutionException e) {
      return failed(batch.size(), "publish failed: " + describe(e.getCause()));
    } catch (java.util.concurrent.CancellationException e) {
      return failed(batch.size(), "publish was cancelled");
    } catch (InterruptedException e) {
      future.cancel(true);
      throw e;
    }
    if (results == null || results.size() != batch.size() || containsNull(results)) {
      log.error(
          "Publisher {} answered {} results for a batch of {} events; each event counts as failed",
          publisher.getClass().getName(),
          results == null ? "null" : results.size(),
          batch.size());
      return failed(batch.size(), "publisher answered a malformed result list");
    }
    return new Answers(new ArrayList<>(results), "");
  }

  /**
   * Whether a publisher's answer holds a null. Not {@code List.contains(null)}: the immutable lists
   * of {@code List.of} and {@code List.copyOf}, the first a publisher reaches for, throw on it.
   */
  private static boolean containsNull(List<PublishResult> results) {
    for (PublishResult result : results) {
      if (result == null) {
        return true;
      }
    }
    return false;
  }

  private static CompletableFuture<List<PublishResult>> asFuture(
      CompletionStage<List<PublishResult>> stage) {
    try {
      return stage.toCompletableFuture();
    } catch (UnsupportedOperationException e) {
      CompletableFuture<List<PublishResult>> copy = new CompletableFuture<>();
      stage.whenComplete(
          (value, error) -> {
            if (error != null) {
              copy.completeExceptionally(error);
            } else {
              copy.complete(value);
            }
          });
      return copy;
    }
  }

  /** The answers a {@link PartialResults} stage has; all unanswered for any other stage. */
  private static List<@Nullable PublishResult> answeredSoFar(
      CompletionStage<?> stage, int size, RelayLog log) {
    List<@Nullable PublishResult> none = new ArrayList<>(Collections.nCopies(size, null));
    if (!(stage instanceof PartialResults partial)) {
      return none;
    }
    try {
      List<@Nullable PublishResult> soFar = partial.answeredSoFar();
      if (soFar == null || soFar.size() != size) {
        log.error(
            "{}.answeredSoFar() gave {} answers for a batch of {}; ignored",
            stage.getClass().getName(),
            soFar == null ? "null" : soFar.size(),
            size);
        return none;
      }
      return new ArrayList<>(soFar);
    } catch (RuntimeException e) {
      log.error("{}.answeredSoFar() threw {}; ignored", stage.getClass().getName(), e.toString());
      return none;
    }
  }

  private static Answers unanswered(int size, String reason) {
    return new Answers(new ArrayList<>(Collections.nCopies(size, null)), reason);
  }

  private static Answers failed(int size, String reason) {
    return new Answers(
        new ArrayList<>(Collections.nCopies(size, PublishResult.retryable(reason))), reason);
  }

  private static long remaining(long deadline) {
    return Math.max(0, deadline - System.nanoTime());
  }

  public static String describe(Throwable t) {
    String message = t.getMessage();
    return t.getClass().getSimpleName() + (message == null ? "" : ": " + message);
  }
}

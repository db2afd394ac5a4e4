package dev.pgoutbox.relay.micrometer;

import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.relay.PublishTracing;

/**
 * The error recorded on a publish observation when the event was not published (retry, dead letter,
 * rolled-back batch): its message is the reason the relay stored in {@code last_error}. Made by the
 * relay, never thrown; it has no stack trace (it would show the relay, not the failure).
 */
public final class PublishFailedException extends OutboxException {

  private static final long serialVersionUID = 1L;

  private final transient PublishTracing.Outcome outcome;

  PublishFailedException(PublishTracing.Outcome outcome) {
    super(outcome.reason() == null ? outcome.fate().name() : outcome.reason());
    this.outcome = outcome;
  }

  /** What became of the event. */
  public PublishTracing.Outcome outcome() {
    return outcome;
  }

  @Override
  public synchronized Throwable fillInStackTrace() {
    return this; // Cheap: one per failed event, and the relay's stack says nothing of the failure.
  }
}

package dev.pgoutbox.relay.internal;

import dev.pgoutbox.relay.Ordering;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.PublishTracing;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.RelayListener;
import dev.pgoutbox.relay.RelayListener.BatchReport;
import dev.pgoutbox.relay.RelayListener.EventFailure;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * One batch's publishing, the same step for the table relay's batches and the WAL reader's: the
 * rows turned into messages (an unusable row dead-lettered), the publisher's answers taken
 * (published, failed, timed out, unanswered), each event's outcome decided and recorded, and the
 * listener told. What a relay does besides (the table relay marks, the WAL relay parks) it does in
 * its {@link Answers}.
 *
 * <p>Strict ordering: per aggregate, the first event that is not published stops that aggregate for
 * the rest of the batch; what comes behind it is held back. A publisher that reports a later event
 * published anyway broke the order, and is logged at ERROR. Nothing one event does can fail the
 * batch: an error while deciding its outcome dead-letters it. Not thread-safe: one batch.
 */
public final class PublishStep {

  /** What a relay does with each answer besides recording it here. */
  public interface Answers {

    /** {@code message} of {@code row} was published. */
    default void published(ClaimedRow row, OutboxMessage message) {}

    /** {@code message} was published after an earlier event of its aggregate was not. */
    default void orderViolation(OutboxMessage message) {}

    /** {@code row} was held back behind an earlier event of its aggregate. */
    default void heldBack(ClaimedRow row) {}

    /** {@code row} failed; its failure is recorded in {@link #failures()}. */
    default void failed(ClaimedRow row) {}
  }

  private final RelayConfig config;
  private final int claimed;
  private final boolean strict;
  private final Set<ClaimedRow.AggregateKey> stopped = new LinkedHashSet<>();
  private final List<OutboxMessage> messages;
  private final List<ClaimedRow> messageRows;
  private final List<OutboxMessage> publishedMessages = new ArrayList<>();
  private final List<Marker.Failure> failures = new ArrayList<>();
  private final List<EventFailure> failureReports = new ArrayList<>();
  private int retried;
  private int dead;
  private int heldBack;

  /** The step for a batch of {@code claimed} rows under {@code config}. */
  public PublishStep(RelayConfig config, int claimed) {
    this.config = config;
    this.claimed = claimed;
    this.strict = config.ordering() == Ordering.STRICT;
    this.messages = new ArrayList<>(claimed);
    this.messageRows = new ArrayList<>(claimed);
  }

  /** How many rows the batch holds. */
  public int claimed() {
    return claimed;
  }

  /** Whether {@code aggregate} is stopped for the rest of the batch (strict ordering only). */
  public boolean isStopped(ClaimedRow.AggregateKey aggregate) {
    return strict && stopped.contains(aggregate);
  }

  /** Stops {@code aggregate} for the rest of the batch (strict ordering only). */
  public void stop(ClaimedRow.AggregateKey aggregate) {
    if (strict) {
      stopped.add(aggregate);
    }
  }

  /** The aggregates stopped so far, in the order they stopped. */
  public Set<ClaimedRow.AggregateKey> stopped() {
    return stopped;
  }

  /** Counts one row held back before publishing. */
  public void heldBack() {
    heldBack++;
  }

  /**
   * Adds {@code row} to what is published, or dead-letters it and stops its aggregate when it is
   * unusable.
   *
   * @return whether the row is usable
   */
  public boolean add(ClaimedRow row) {
    switch (MessageMapper.toMessage(row)) {
      case MessageMapper.Usable(OutboxMessage message) -> {
        messages.add(message);
        messageRows.add(row);
        return true;
      }
      case MessageMapper.Unusable(String reason) -> {
        deadLetter(row, MessageMapper.forReport(row), "unusable row: " + reason);
        stop(row.aggregate());
        return false;
      }
    }
  }

  /** How many messages were added to publish. */
  public int messageCount() {
    return messages.size();
  }

  /**
   * Publishes the messages added (nothing when none) and takes the publisher's answers, telling
   * {@code answers} of each.
   *
   * @throws InterruptedException when interrupted while publishing: nothing may be recorded
   */
  public void publish(Publisher publisher, PublishTracing tracing, RelayLog log, Answers answers)
      throws InterruptedException {
    if (messages.isEmpty()) {
      return;
    }
    TracedBatch traced = TracedBatch.start(tracing, messages, publisher, log);
    try {
      PublishCall.Answers results =
          PublishCall.publish(publisher, traced.messages(), config.publishTimeout(), log);
      if (Thread.currentThread().isInterrupted()) {
        // stop() gave up on this batch: roll it back rather than record attempts.
        throw new InterruptedException("interrupted while publishing");
      }
      for (int i = 0; i < messages.size(); i++) {
        OutboxMessage message = messages.get(i);
        ClaimedRow row = messageRows.get(i);
        PublishResult result = results.results().get(i);
        boolean aggregateStopped = isStopped(row.aggregate());
        if (result instanceof PublishResult.Published) {
          if (aggregateStopped) {
            // It is out: record it so it is not sent a second time, and say loudly what happened.
            log.errorEvent(
                message,
                "Order violation by publisher {}: it reported this event published after an"
                    + " earlier event of its aggregate failed or went unanswered in the same batch",
                publisher.getClass().getName());
            answers.orderViolation(message);
          }
          publishedMessages.add(message);
          answers.published(row, message);
          traced.published(i, result);
        } else if (aggregateStopped) {
          heldBack++;
          answers.heldBack(row);
          traced.heldBack(i);
        } else {
          EventFailure failure = decideFailure(row, message, result, results.unansweredReason());
          traced.failed(i, failure, result instanceof PublishResult.Permanent);
          answers.failed(row);
          stop(row.aggregate());
        }
      }
    } finally {
      traced.end();
    }
  }

  /** The failures to record, in the order they came. */
  public List<Marker.Failure> failures() {
    return failures;
  }

  /** How many events were published. */
  public int publishedCount() {
    return publishedMessages.size();
  }

  /**
   * Tells the listener (and the log) of each published and failed event; {@code retryingFormat}
   * logs a failure that is tried again (attempt, delay, reason).
   */
  public void reportEvents(RelayListener listener, RelayLog log, String retryingFormat) {
    Instant now = config.clock().instant();
    for (OutboxMessage message : publishedMessages) {
      listener.onPublished(message, Duration.between(message.createdAt(), now));
    }
    for (EventFailure failure : failureReports) {
      if (failure.dead()) {
        log.errorEvent(
            failure.message(),
            "Event dead-lettered after {} attempt(s): {}",
            failure.attempts(),
            failure.reason());
      } else {
        log.warnEvent(
            failure.message(),
            retryingFormat,
            failure.attempts(),
            failure.retryIn(),
            failure.reason());
      }
      listener.onFailed(failure);
    }
  }

  /** The batch's report for {@link RelayListener#onBatch}, which took {@code duration}. */
  public BatchReport batchReport(Duration duration) {
    return new BatchReport(claimed, publishedMessages.size(), retried, dead, heldBack, duration);
  }

  /** Records one failed (or unanswered) event; an error while deciding dead-letters it. */
  private EventFailure decideFailure(
      ClaimedRow row,
      OutboxMessage message,
      @Nullable PublishResult result,
      String unansweredReason) {
    try {
      return switch (result) {
        case null -> fail(row, message, unansweredReason, false, null);
        case PublishResult.Permanent p -> fail(row, message, p.reason(), true, null);
        case PublishResult.Retryable r -> fail(row, message, r.reason(), false, r.retryAfter());
        case PublishResult.Published p -> throw new IllegalStateException("published");
      };
    } catch (RuntimeException e) {
      return deadLetter(
          row,
          message,
          "the relay could not decide this event's outcome: " + PublishCall.describe(e));
    }
  }

  private EventFailure fail(
      ClaimedRow row,
      OutboxMessage message,
      String reason,
      boolean permanent,
      @Nullable Duration hint) {
    int attempts = MessageMapper.nextAttempt(row.attempts());
    boolean isDead = permanent || attempts >= config.maxAttempts();
    Duration retryIn = isDead ? Duration.ZERO : FailureRules.retryDelay(config, attempts, hint);
    return addFailure(row, message, reason, attempts, isDead, retryIn);
  }

  /** Dead-letters {@code row} at once with {@code reason}. */
  private EventFailure deadLetter(ClaimedRow row, OutboxMessage message, String reason) {
    return addFailure(
        row, message, reason, MessageMapper.nextAttempt(row.attempts()), true, Duration.ZERO);
  }

  private EventFailure addFailure(
      ClaimedRow row,
      OutboxMessage message,
      String reason,
      int attempts,
      boolean isDead,
      Duration retryIn) {
    String stored = FailureRules.storedReason(reason, config.lastErrorMaxLength());
    failures.add(new Marker.Failure(row.id(), attempts, stored, isDead, retryIn));
    EventFailure report = new EventFailure(message, stored, attempts, isDead, retryIn);
    failureReports.add(report);
    if (isDead) {
      dead++;
    } else {
      retried++;
    }
    return report;
  }
}

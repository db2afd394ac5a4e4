package dev.pgoutbox.relay.wal;

import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.PublishTracing;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.RelayListener;
import dev.pgoutbox.relay.RelayListener.BatchReport;
import dev.pgoutbox.relay.RelayListener.EventFailure;
import dev.pgoutbox.relay.internal.ClaimedRow;
import dev.pgoutbox.relay.internal.FailureRules;
import dev.pgoutbox.relay.internal.Marker;
import dev.pgoutbox.relay.internal.MessageMapper;
import dev.pgoutbox.relay.internal.PublishCall;
import dev.pgoutbox.relay.internal.RelayLog;
import dev.pgoutbox.relay.internal.TracedBatch;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The reader's publishing of a batch read: publishes what is due, parks failures and what waits
 * behind them, submits the published rows to the completer and reports.
 */
final class WalBatchPublisher {

  private final Publisher publisher;
  private final PublishTracing tracing;
  private final RelayConfig config;
  private final RelayListener listener;
  private final RelayLog log;
  private final WalParking parking;
  private final WalUnseen unseen;
  private final WalCompleter completer;

  /** The highest LSN submitted to the completer to acknowledge. */
  private long submittedAck;

  /** The publishing of the reader that parks with {@code parking}. */
  WalBatchPublisher(
      Publisher publisher,
      PublishTracing tracing,
      RelayConfig config,
      RelayListener listener,
      RelayLog log,
      WalParking parking,
      WalUnseen unseen,
      WalCompleter completer) {
    this.publisher = publisher;
    this.tracing = tracing;
    this.config = config;
    this.listener = listener;
    this.log = log;
    this.parking = parking;
    this.unseen = unseen;
    this.completer = completer;
  }

  /** The highest LSN submitted to the completer to acknowledge. */
  long submittedAck() {
    return submittedAck;
  }

  /** A read with no rows: has the completer acknowledge {@code ackLsn} once what is before it. */
  void submitEmpty(long ackLsn) {
    if (ackLsn > submittedAck) {
      completer.submit(new long[0], Set.of(), ackLsn);
      submittedAck = ackLsn;
    }
  }

  /** Publishes {@code taken}, then acknowledges {@code ackLsn} through the completer. */
  void publish(WalBatch.Taken taken, long ackLsn, @Nullable WalMessages walMessages)
      throws SQLException, InterruptedException {
    List<ClaimedRow> rowsRead = taken.rows();
    Map<Long, Long> commitLsns = taken.commitLsns();
    Set<Integer> writers = taken.writers();
    long started = System.nanoTime();
    Set<ClaimedRow.AggregateKey> stillParked = parking.stillParked(rowsRead);
    List<Long> park = new ArrayList<>();
    List<Marker.Failure> failures = new ArrayList<>();
    List<EventFailure> failureReports = new ArrayList<>();
    Set<ClaimedRow.AggregateKey> stopped = new LinkedHashSet<>();
    List<OutboxMessage> messages = new ArrayList<>(rowsRead.size());
    List<ClaimedRow> messageRows = new ArrayList<>(rowsRead.size());
    for (ClaimedRow row : rowsRead) {
      if (stillParked.contains(row.aggregate()) || stopped.contains(row.aggregate())) {
        park.add(row.position());
        continue;
      }
      if (unseen.behind(row)) {
        // An older row of its aggregate, pending when the stream attached, has not been read:
        // committed later (with writers not serialized), or skipped by the slot. Handed to the
        // drainer, which follows the commit order, or after a fall-back the position order.
        park.add(row.position());
        stopped.add(row.aggregate());
        continue;
      }
      if (!row.due()) {
        // Born dead, parked or waiting for a retry (written by hand): the drainer's, and its
        // aggregate waits behind it as in the table.
        park.add(row.position());
        stopped.add(row.aggregate());
        continue;
      }
      switch (MessageMapper.toMessage(row)) {
        case MessageMapper.Usable(OutboxMessage message) -> {
          messages.add(message);
          messageRows.add(row);
        }
        case MessageMapper.Unusable(String reason) -> {
          fail(
              row,
              MessageMapper.forReport(row),
              "unusable row: " + reason,
              true,
              null,
              failures,
              failureReports);
          park.add(row.position());
          stopped.add(row.aggregate());
        }
      }
    }
    long[] published = new long[messages.size()];
    int publishedCount = 0;
    List<OutboxMessage> publishedMessages = new ArrayList<>(messages.size());
    if (!messages.isEmpty()) {
      TracedBatch traced = TracedBatch.start(tracing, messages, publisher, log);
      try {
        PublishCall.Answers answers =
            PublishCall.publish(publisher, traced.messages(), config.publishTimeout(), log);
        if (Thread.currentThread().isInterrupted()) {
          throw new InterruptedException("interrupted while publishing");
        }
        for (int i = 0; i < messages.size(); i++) {
          OutboxMessage message = messages.get(i);
          ClaimedRow row = messageRows.get(i);
          PublishResult result = answers.results().get(i);
          boolean isStopped = stopped.contains(row.aggregate());
          if (result instanceof PublishResult.Published) {
            if (isStopped) {
              log.errorEvent(
                  message,
                  "Order violation by publisher {}: it reported this event published after an"
                      + " earlier event of its aggregate failed or went unanswered in the same"
                      + " batch",
                  publisher.getClass().getName());
              listener.onOrderViolation(message);
            }
            if (!WalMessages.fromMessage(row)) { // a delivered message has no row to complete
              published[publishedCount++] = row.position();
            }
            publishedMessages.add(message);
            traced.published(i, result);
          } else if (isStopped) {
            park.add(row.position());
            traced.heldBack(i);
          } else {
            EventFailure failure =
                switch (result) {
                  case null ->
                      fail(
                          row,
                          message,
                          answers.unansweredReason(),
                          false,
                          null,
                          failures,
                          failureReports);
                  case PublishResult.Permanent p ->
                      fail(row, message, p.reason(), true, null, failures, failureReports);
                  case PublishResult.Retryable r ->
                      fail(
                          row,
                          message,
                          r.reason(),
                          false,
                          r.retryAfter(),
                          failures,
                          failureReports);
                  case PublishResult.Published p -> throw new IllegalStateException("published");
                };
            traced.failed(i, failure, result instanceof PublishResult.Permanent);
            park.add(row.position());
            stopped.add(row.aggregate());
          }
        }
      } finally {
        traced.end();
      }
    }
    if (!park.isEmpty()) {
      parking.recordParking(
          failures, park, commitLsns, writers, WalMessages.parked(rowsRead, park), walMessages);
      parking.addAll(stopped);
    }
    completer.submit(
        publishedCount == published.length
            ? published
            : java.util.Arrays.copyOf(published, publishedCount),
        writers,
        ackLsn);
    submittedAck = Math.max(submittedAck, ackLsn);
    report(
        rowsRead.size(), publishedMessages, failureReports, park.size() - failures.size(), started);
  }

  /** Records a failure of {@code row} in {@code failures} and {@code reports}. */
  private EventFailure fail(
      ClaimedRow row,
      OutboxMessage message,
      String reason,
      boolean permanent,
      @Nullable Duration hint,
      List<Marker.Failure> failures,
      List<EventFailure> reports) {
    int attempts = MessageMapper.nextAttempt(row.attempts());
    boolean dead = permanent || attempts >= config.maxAttempts();
    Duration retryIn = dead ? Duration.ZERO : FailureRules.retryDelay(config, attempts, hint);
    String stored = FailureRules.storedReason(reason, config.lastErrorMaxLength());
    failures.add(new Marker.Failure(row.id(), attempts, stored, dead, retryIn));
    EventFailure failure = new EventFailure(message, stored, attempts, dead, retryIn);
    reports.add(failure);
    return failure;
  }

  /** Tells the listener (and the log) what became of a batch. */
  private void report(
      int read,
      List<OutboxMessage> publishedMessages,
      List<EventFailure> failures,
      int heldBack,
      long started) {
    Instant now = config.clock().instant();
    for (OutboxMessage message : publishedMessages) {
      listener.onPublished(message, Duration.between(message.createdAt(), now));
    }
    int dead = 0;
    for (EventFailure failure : failures) {
      if (failure.dead()) {
        dead++;
        log.errorEvent(
            failure.message(),
            "Event dead-lettered after {} attempt(s): {}",
            failure.attempts(),
            failure.reason());
      } else {
        log.warnEvent(
            failure.message(),
            "Publish failed (attempt {}), parked for the table relay, retrying in {}: {}",
            failure.attempts(),
            failure.retryIn(),
            failure.reason());
      }
      listener.onFailed(failure);
    }
    listener.onBatch(
        new BatchReport(
            read,
            publishedMessages.size(),
            failures.size() - dead,
            dead,
            heldBack,
            Duration.ofNanos(System.nanoTime() - started)));
  }
}

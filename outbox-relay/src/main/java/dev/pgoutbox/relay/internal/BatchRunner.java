package dev.pgoutbox.relay.internal;

import dev.pgoutbox.relay.Ordering;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.RelayListener;
import dev.pgoutbox.relay.RelayListener.BatchReport;
import dev.pgoutbox.relay.RelayListener.EventFailure;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.conf.Settings;
import org.jooq.impl.DSL;

/**
 * One batch: claim, publish, mark, commit, in one transaction. The rows stay locked while the
 * publisher works, so a crash at any point releases them untouched for another relay.
 *
 * <p>Strict ordering: per aggregate, the first event that is not published ends that aggregate's
 * turn in the batch. It is recorded as failed; the events behind it are left exactly as they were
 * (held back, not counted as attempts) and go out after it.
 */
public final class BatchRunner {

  /** Slack on top of the publish timeout before PostgreSQL ends an idle claim transaction. */
  private static final Duration IDLE_TRANSACTION_SLACK = Duration.ofSeconds(10);

  private final DataSource dataSource;
  private final Settings settings;
  private final Claimer claimer;
  private final Marker marker;
  private final Publisher publisher;
  private final RelayConfig config;
  private final RelayListener listener;
  private final RelayLog log;

  /** A runner of batches for one relay. Not thread-safe: one batch at a time. */
  public BatchRunner(
      DataSource dataSource,
      Settings settings,
      Publisher publisher,
      RelayConfig config,
      RelayListener listener,
      RelayLog log) {
    this.dataSource = dataSource;
    this.settings = settings;
    this.claimer = new Claimer(config.batchSize(), config.ordering(), config.deadLetterPolicy());
    this.marker = new Marker(config.completion());
    this.publisher = publisher;
    this.config = config;
    this.listener = listener;
    this.log = log;
  }

  /**
   * Runs one batch.
   *
   * @return the number of events claimed (a full batch means more are probably waiting)
   * @throws SQLException or {@link org.jooq.exception.DataAccessException} when the database fails;
   *     the transaction is rolled back and nothing is lost
   * @throws InterruptedException when interrupted while publishing; rolled back likewise
   */
  public int runOnce() throws SQLException, InterruptedException {
    long started = System.nanoTime();
    Outcome outcome;
    try (Connection connection = dataSource.getConnection()) {
      boolean autoCommit = connection.getAutoCommit();
      int isolation = connection.getTransactionIsolation();
      connection.setAutoCommit(false);
      connection.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
      try {
        DSLContext tx = DSL.using(connection, SQLDialect.POSTGRES, settings);
        Sql.configureClaimTransaction(
            tx,
            Sql.applicationName(log.relayName()),
            config.publishTimeout().plus(IDLE_TRANSACTION_SLACK),
            config.synchronousCommit());
        List<ClaimedRow> rows = claimer.claim(tx);
        if (rows.isEmpty()) {
          connection.commit();
          return 0;
        }
        outcome = publishAndDecide(rows);
        marker.published(tx, outcome.publishedPositions());
        marker.failed(tx, outcome.failures());
        connection.commit();
      } catch (SQLException | RuntimeException | InterruptedException | Error e) {
        rollbackQuietly(connection);
        throw e;
      } finally {
        restore(connection, autoCommit, isolation);
      }
    }
    report(outcome, Duration.ofNanos(System.nanoTime() - started));
    return outcome.claimed();
  }

  private Outcome publishAndDecide(List<ClaimedRow> rows) throws InterruptedException {
    boolean strict = config.ordering() == Ordering.STRICT;
    Outcome outcome = new Outcome(rows.size());
    Set<ClaimedRow.AggregateKey> stopped = new HashSet<>();
    List<OutboxMessage> batch = new ArrayList<>(rows.size());
    List<ClaimedRow> batchRows = new ArrayList<>(rows.size());
    for (ClaimedRow row : rows) {
      if (strict && stopped.contains(row.aggregate())) {
        outcome.heldBack++;
        continue;
      }
      Object mapped = MessageMapper.toMessage(row);
      if (mapped instanceof MessageMapper.Unusable unusable) {
        outcome.fail(row, messageOf(row), "unusable row: " + unusable.reason(), true, null);
        if (strict) {
          stopped.add(row.aggregate());
        }
        continue;
      }
      batch.add((OutboxMessage) mapped);
      batchRows.add(row);
    }
    if (batch.isEmpty()) {
      return outcome;
    }

    List<PublishResult> results = publish(batch);
    if (Thread.currentThread().isInterrupted()) {
      // stop() gave up on this batch: roll it back rather than record attempts.
      throw new InterruptedException("interrupted while publishing");
    }
    for (int i = 0; i < batch.size(); i++) {
      OutboxMessage message = batch.get(i);
      ClaimedRow row = batchRows.get(i);
      PublishResult result = results.get(i);
      boolean aggregateStopped = strict && stopped.contains(row.aggregate());
      if (result instanceof PublishResult.Published) {
        if (aggregateStopped) {
          // The publisher broke its contract: it delivered an event after an earlier one of the
          // same aggregate failed. It is out; record it so it is not sent a second time.
          log.warnEvent(
              message,
              "Publisher delivered an event after an earlier event of its aggregate failed in"
                  + " the same batch: per-aggregate order was not kept by the publisher");
        }
        outcome.published(message);
      } else if (aggregateStopped) {
        outcome.heldBack++;
      } else {
        String reason;
        boolean permanent;
        Duration hint = null;
        if (result instanceof PublishResult.Permanent p) {
          reason = p.reason();
          permanent = true;
        } else {
          PublishResult.Retryable r = (PublishResult.Retryable) result;
          reason = r.reason();
          permanent = false;
          hint = r.retryAfter();
        }
        outcome.fail(row, message, reason, permanent, hint);
        if (strict) {
          stopped.add(row.aggregate());
        }
      }
    }
    return outcome;
  }

  /** Publishes and waits up to the publish timeout; any failure of the call fails the batch. */
  private List<PublishResult> publish(List<OutboxMessage> batch) throws InterruptedException {
    CompletableFuture<List<PublishResult>> future;
    try {
      future = publisher.publish(List.copyOf(batch)).toCompletableFuture();
    } catch (RuntimeException e) {
      return all(batch.size(), "publisher threw " + describe(e));
    }
    List<PublishResult> results;
    try {
      results = future.get(config.publishTimeout().toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      future.cancel(true);
      return all(batch.size(), "publish timed out after " + config.publishTimeout());
    } catch (ExecutionException e) {
      return all(batch.size(), "publish failed: " + describe(e.getCause()));
    } catch (InterruptedException e) {
      future.cancel(true);
      throw e;
    }
    if (results == null || results.size() != batch.size() || results.contains(null)) {
      log.error(
          "Publisher {} answered {} results for a batch of {} events; retrying the batch",
          publisher.getClass().getName(),
          results == null ? "null" : results.size(),
          batch.size());
      return all(batch.size(), "publisher answered a malformed result list");
    }
    return results;
  }

  private static List<PublishResult> all(int size, String reason) {
    List<PublishResult> results = new ArrayList<>(size);
    PublishResult failure = PublishResult.retryable(reason);
    for (int i = 0; i < size; i++) {
      results.add(failure);
    }
    return results;
  }

  private void report(Outcome outcome, Duration duration) {
    Instant now = config.clock().instant();
    for (OutboxMessage message : outcome.publishedMessages) {
      listener.onPublished(message, Duration.between(message.createdAt(), now));
    }
    for (EventFailure failure : outcome.failureReports) {
      if (failure.dead()) {
        log.errorEvent(
            failure.message(),
            "Event dead-lettered after {} attempt(s): {}",
            failure.attempts(),
            failure.reason());
      } else {
        log.warnEvent(
            failure.message(),
            "Publish failed (attempt {}), retrying in {}: {}",
            failure.attempts(),
            failure.retryIn(),
            failure.reason());
      }
      listener.onFailed(failure);
    }
    listener.onBatch(
        new BatchReport(
            outcome.claimed(),
            outcome.publishedMessages.size(),
            outcome.retried,
            outcome.dead,
            outcome.heldBack,
            duration));
  }

  private static OutboxMessage messageOf(ClaimedRow row) {
    // For reporting an unusable row: its headers are what could not be read.
    return MessageMapper.message(row, java.util.Map.of());
  }

  private static String describe(Throwable t) {
    String message = t.getMessage();
    return t.getClass().getSimpleName() + (message == null ? "" : ": " + message);
  }

  private static void rollbackQuietly(Connection connection) {
    try {
      connection.rollback();
    } catch (SQLException ignored) {
      // The connection is broken; closing it releases the locks all the same.
    }
  }

  private static void restore(Connection connection, boolean autoCommit, int isolation) {
    try {
      connection.setTransactionIsolation(isolation);
      connection.setAutoCommit(autoCommit);
    } catch (SQLException ignored) {
      // A broken connection: the pool discards it.
    }
  }

  /** What to record for one batch. */
  private final class Outcome {
    private final int claimed;
    private final List<Long> publishedPositions = new ArrayList<>();
    private final List<OutboxMessage> publishedMessages = new ArrayList<>();
    private final List<Marker.Failure> failures = new ArrayList<>();
    private final List<EventFailure> failureReports = new ArrayList<>();
    private int retried;
    private int dead;
    private int heldBack;

    Outcome(int claimed) {
      this.claimed = claimed;
    }

    int claimed() {
      return claimed;
    }

    List<Long> publishedPositions() {
      return publishedPositions;
    }

    List<Marker.Failure> failures() {
      return failures;
    }

    void published(OutboxMessage message) {
      publishedPositions.add(message.position());
      publishedMessages.add(message);
    }

    void fail(
        ClaimedRow row,
        OutboxMessage message,
        String reason,
        boolean permanent,
        Duration retryAfterHint) {
      int attempts = row.attempts() + 1;
      boolean isDead = permanent || attempts >= config.maxAttempts();
      Duration retryIn = Duration.ZERO;
      if (!isDead) {
        retryIn = Duration.ofMillis(config.backoff().apply(attempts));
        if (retryAfterHint != null && retryAfterHint.compareTo(retryIn) > 0) {
          retryIn = retryAfterHint;
        }
      }
      String stored = truncate(reason, config.lastErrorMaxLength());
      failures.add(new Marker.Failure(row.id(), attempts, stored, isDead, retryIn));
      failureReports.add(new EventFailure(message, stored, attempts, isDead, retryIn));
      if (isDead) {
        dead++;
      } else {
        retried++;
      }
    }
  }

  private static String truncate(String reason, int max) {
    String text = reason.replace('\u0000', ' ');
    return text.length() <= max ? text : text.substring(0, max - 3) + "...";
  }
}

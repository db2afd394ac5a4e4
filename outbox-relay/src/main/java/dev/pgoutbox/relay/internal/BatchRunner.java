package dev.pgoutbox.relay.internal;

import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.relay.Ordering;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.PublishTracing;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.RelayListener;
import dev.pgoutbox.relay.RelayListener.BatchReport;
import dev.pgoutbox.relay.RelayListener.EventFailure;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.conf.Settings;
import org.jooq.exception.DataAccessException;
import org.jooq.impl.DSL;
import org.jspecify.annotations.Nullable;

/**
 * One batch: claim, publish, mark, commit, in one transaction. The rows stay locked while the
 * publisher works, so a crash at any point releases them untouched for another relay.
 *
 * <p>Strict ordering: per aggregate, the first event that is not published ends that aggregate's
 * turn in the batch. It is recorded as failed; the events behind it are left exactly as they were
 * (held back, not counted as attempts) and go out after it. A publisher that reports a later event
 * published anyway broke the order: counted ({@link RelayListener#onOrderViolation}) and logged at
 * ERROR.
 *
 * <p>Nothing one event does can fail the batch: an unusable row, an absurd retry hint, or an error
 * while deciding or recording one event's outcome dead-letters that event with the reason, and the
 * others are recorded as usual. A publish that passes the timeout keeps the answers that arrived.
 */
public final class BatchRunner {

  /** Slack on top of the publish timeout before PostgreSQL ends an idle claim transaction. */
  private static final Duration IDLE_TRANSACTION_SLACK = Duration.ofSeconds(10);

  private final DataSource dataSource;
  private final Settings settings;
  private final Claimer claimer;
  private final Marker marker;
  private final Publisher publisher;
  private final PublishTracing tracing;
  private final RelayConfig config;
  private final RelayListener listener;
  private final RelayLog log;

  private final java.util.concurrent.atomic.AtomicReference<@Nullable Boolean> parkedOnlyRequest =
      new java.util.concurrent.atomic.AtomicReference<>();

  private volatile @Nullable FallBackGuard fallBackGuard;

  /** Whether the claimer claims every pending row (not parked ones only). */
  private boolean claimingAll = true;

  /**
   * Consults {@code guard} in each claim transaction while every pending row is claimed; null: no
   * guard.
   */
  public void fallBackGuard(@Nullable FallBackGuard guard) {
    fallBackGuard = guard;
  }

  /**
   * From the next batch on, claims only rows a WAL reader parked ({@code true}: the drainer of a
   * WAL relay) or every pending row ({@code false}). Any thread; strict ordering only.
   */
  public void parkedOnly(boolean parkedOnly) {
    if (config.ordering() != Ordering.STRICT) {
      throw new IllegalStateException("parked-only claims need strict ordering");
    }
    parkedOnlyRequest.set(parkedOnly);
  }

  /** A runner of batches for one relay. Not thread-safe: one batch at a time. */
  public BatchRunner(
      DataSource dataSource,
      String schema,
      Settings settings,
      Publisher publisher,
      PublishTracing tracing,
      RelayConfig config,
      RelayListener listener,
      RelayLog log) {
    this.dataSource = dataSource;
    this.settings = settings;
    this.claimer =
        new Claimer(
            config.batchSize(),
            config.maxBatchBytes(),
            config.ordering(),
            config.deadLetterPolicy(),
            schema);
    this.marker = new Marker(config.completion(), schema);
    this.publisher = publisher;
    this.tracing = tracing;
    this.config = config;
    this.listener = listener;
    this.log = log;
  }

  /**
   * A writer committed events from {@code position} on: the next claim looks from there at the
   * latest (see {@link Claimer#committedFrom}).
   */
  public void committedFrom(long position) {
    claimer.committedFrom(position);
  }

  /**
   * Whether the last {@link #runOnce} may have left events pending although its batch was not full
   * (see {@link Claimer#mayHaveLeftEvents}).
   */
  public boolean claimMayHaveLeftEvents() {
    return claimer.mayHaveLeftEvents();
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
    Boolean parkedOnly = parkedOnlyRequest.getAndSet(null);
    if (parkedOnly != null) {
      claimer.parkedOnly(parkedOnly);
      claimingAll = !parkedOnly;
    }
    long started = System.nanoTime();
    Outcome outcome;
    try (Connection connection = dataSource.getConnection()) {
      boolean autoCommit = connection.getAutoCommit();
      connection.setAutoCommit(false);
      try {
        DSLContext tx = DSL.using(connection, SQLDialect.POSTGRES, settings);
        Sql.configureClaimTransaction(
            tx,
            Sql.applicationName(log.relayName()),
            config.publishTimeout().plus(IDLE_TRANSACTION_SLACK),
            config.synchronousCommit());
        FallBackGuard guard = fallBackGuard;
        if (guard != null && claimingAll) {
          switch (guard.decide(connection)) {
            case CLAIM_ALL -> {}
            case CLAIM_NOTHING -> {
              connection.commit();
              return 0;
            }
            case PARKED_ONLY -> {
              claimer.parkedOnly(true);
              claimingAll = false;
              fallBackGuard = null;
              guard.resumed();
            }
          }
        }
        List<ClaimedRow> rows = claimer.claim(tx);
        if (rows.isEmpty()) {
          connection.commit();
          return 0;
        }
        outcome = publishAndDecide(rows);
        outcome.recorded += marker.published(tx, outcome.publishedPositions());
        outcome.recorded += recordFailures(connection, tx, outcome.failures());
        connection.commit();
      } catch (SQLException | RuntimeException e) {
        rollbackQuietly(connection);
        String advice = PreparedStatementLoss.advice(e);
        if (advice != null) {
          throw new OutboxException("Batch failed: " + advice, e);
        }
        throw e;
      } catch (InterruptedException | Error e) {
        rollbackQuietly(connection);
        throw e;
      } finally {
        restore(connection, autoCommit);
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
      switch (MessageMapper.toMessage(row)) {
        case MessageMapper.Usable(OutboxMessage message) -> {
          batch.add(message);
          batchRows.add(row);
        }
        case MessageMapper.Unusable(String reason) -> {
          outcome.deadLetter(row, MessageMapper.forReport(row), "unusable row: " + reason);
          if (strict) {
            stopped.add(row.aggregate());
          }
        }
      }
    }
    if (batch.isEmpty()) {
      return outcome;
    }

    TracedBatch traced = TracedBatch.start(tracing, batch, publisher, log);
    try {
      PublishCall.Answers answers =
          PublishCall.publish(publisher, traced.messages(), config.publishTimeout(), log);
      if (Thread.currentThread().isInterrupted()) {
        // stop() gave up on this batch: roll it back rather than record attempts.
        throw new InterruptedException("interrupted while publishing");
      }
      for (int i = 0; i < batch.size(); i++) {
        OutboxMessage message = batch.get(i);
        ClaimedRow row = batchRows.get(i);
        PublishResult result = answers.results().get(i);
        boolean aggregateStopped = strict && stopped.contains(row.aggregate());
        if (isPublished(result)) {
          if (aggregateStopped) {
            // It is out: record it so it is not sent a second time, and say loudly what happened.
            log.errorEvent(
                message,
                "Order violation by publisher {}: it reported this event published after an"
                    + " earlier event of its aggregate failed or went unanswered in the same batch",
                publisher.getClass().getName());
            outcome.orderViolations.add(message);
          }
          outcome.published(message);
          traced.published(i, result);
        } else if (aggregateStopped) {
          outcome.heldBack++;
          traced.heldBack(i);
        } else {
          EventFailure failure =
              decideFailure(outcome, row, message, result, answers.unansweredReason());
          traced.failed(i, failure, result instanceof PublishResult.Permanent);
          if (strict) {
            stopped.add(row.aggregate());
          }
        }
      }
    } finally {
      traced.end();
    }
    return outcome;
  }

  /** Whether the publisher answered published; {@code null} is an unanswered event. */
  private static boolean isPublished(@Nullable PublishResult result) {
    return switch (result) {
      case null -> false;
      case PublishResult.Published p -> true;
      case PublishResult.Retryable r -> false;
      case PublishResult.Permanent p -> false;
    };
  }

  /** Records one failed (or unanswered) event; an error while deciding dead-letters it. */
  private EventFailure decideFailure(
      Outcome outcome,
      ClaimedRow row,
      OutboxMessage message,
      @Nullable PublishResult result,
      String unansweredReason) {
    try {
      return switch (result) {
        case null -> outcome.fail(row, message, unansweredReason, false, null);
        case PublishResult.Permanent p -> outcome.fail(row, message, p.reason(), true, null);
        case PublishResult.Retryable r ->
            outcome.fail(row, message, r.reason(), false, r.retryAfter());
        case PublishResult.Published p -> throw new IllegalStateException("published");
      };
    } catch (RuntimeException e) {
      return outcome.deadLetter(
          row, message, "the relay could not decide this event's outcome: " + describe(e));
    }
  }

  /**
   * Records the failures. Should one of them fail to record (any database error), the batch is not
   * rolled back: each failure is recorded on its own behind a savepoint, and the one that cannot be
   * is dead-lettered with PostgreSQL's reason.
   */
  private int recordFailures(Connection connection, DSLContext tx, List<Marker.Failure> failures)
      throws SQLException {
    if (failures.isEmpty()) {
      return 0;
    }
    Savepoint all = connection.setSavepoint();
    try {
      return marker.failed(tx, failures);
    } catch (DataAccessException e) {
      connection.rollback(all);
    }
    int recorded = 0;
    for (Marker.Failure failure : failures) {
      Savepoint one = connection.setSavepoint();
      try {
        recorded += marker.failed(tx, List.of(failure));
      } catch (DataAccessException e) {
        connection.rollback(one);
        String reason =
            FailureRules.storedReason(
                "the relay could not record this event's failure ("
                    + describe(e)
                    + "); last failure: "
                    + failure.reason(),
                config.lastErrorMaxLength());
        log.error("Event {} dead-lettered: {}", failure.id(), reason);
        recorded +=
            marker.failed(
                tx,
                List.of(
                    new Marker.Failure(
                        failure.id(), failure.attempts(), reason, true, Duration.ZERO)));
      }
    }
    return recorded;
  }

  private void report(Outcome outcome, Duration duration) {
    int expected = outcome.publishedPositions.size() + outcome.failures.size();
    if (outcome.recorded != expected) {
      log.error(
          "Recorded {} of {} outcomes: rows this relay held were changed behind its back",
          outcome.recorded,
          expected);
      listener.onRecordShortfall(expected, outcome.recorded);
    }
    for (OutboxMessage message : outcome.orderViolations) {
      listener.onOrderViolation(message);
    }
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

  private static String describe(Throwable t) {
    return PublishCall.describe(t);
  }

  private static void rollbackQuietly(Connection connection) {
    try {
      connection.rollback();
    } catch (SQLException ignored) {
      // The connection is broken; closing it releases the locks all the same.
    }
  }

  private static void restore(Connection connection, boolean autoCommit) {
    try {
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
    private final List<OutboxMessage> orderViolations = new ArrayList<>();
    private int retried;
    private int dead;
    private int heldBack;
    private int recorded;

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

    EventFailure fail(
        ClaimedRow row,
        OutboxMessage message,
        String reason,
        boolean permanent,
        Duration retryAfterHint) {
      int attempts = MessageMapper.nextAttempt(row.attempts());
      boolean isDead = permanent || attempts >= config.maxAttempts();
      Duration retryIn = isDead ? Duration.ZERO : retryDelay(attempts, retryAfterHint);
      return addFailure(row, message, reason, attempts, isDead, retryIn);
    }

    /** Dead-letters {@code row} at once with {@code reason}. */
    EventFailure deadLetter(ClaimedRow row, OutboxMessage message, String reason) {
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

  /**
   * The backoff for {@code attempts}, or the publisher's hint when longer: the hint cut at {@link
   * RelayConfig#maxRetryHint()}, everything cut at {@link RelayConfig#MAX_RETRY_DELAY}, so the
   * stored {@code retry_after} is always a reachable time.
   */
  private Duration retryDelay(int attempts, @Nullable Duration hint) {
    return FailureRules.retryDelay(config, attempts, hint);
  }
}

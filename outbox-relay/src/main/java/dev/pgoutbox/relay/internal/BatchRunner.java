package dev.pgoutbox.relay.internal;

import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.relay.Ordering;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishTracing;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.RelayListener;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.conf.Settings;
import org.jooq.exception.DataAccessException;
import org.jooq.impl.DSL;
import org.jspecify.annotations.Nullable;

/**
 * One batch: claim, publish, mark, commit, in one transaction. The rows stay locked while the
 * publisher works, so a crash at any point releases them untouched for another relay. The
 * publishing, its ordering and what a failing event does to the others are {@link PublishStep}'s,
 * the same for the WAL reader; the events a strict batch holds back are left exactly as they were
 * (not counted as attempts) and go out after the event that stopped them.
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

  private final AtomicReference<@Nullable Boolean> parkedOnlyRequest = new AtomicReference<>();

  private volatile @Nullable FallBackGuard fallBackGuard;

  /** Whether the claimer claims every pending row (not parked ones only). */
  private boolean claimingAll = true;

  /** Consults {@code guard} (null: none) in each claim of every pending row. */
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

  /** A writer committed events from {@code position} on ({@link Claimer#committedFrom}). */
  public void committedFrom(long position) {
    claimer.committedFrom(position);
  }

  /** Whether the last {@link #runOnce} may have left events pending: {@link Claimer}'s answer. */
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
        outcome.recorded += marker.published(tx, outcome.publishedPositions);
        outcome.recorded += recordFailures(connection, tx, outcome.step.failures());
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
    return outcome.step.claimed();
  }

  private Outcome publishAndDecide(List<ClaimedRow> rows) throws InterruptedException {
    Outcome outcome = new Outcome(new PublishStep(config, rows.size()));
    PublishStep step = outcome.step;
    for (ClaimedRow row : rows) {
      if (step.isStopped(row.aggregate())) {
        step.heldBack();
        continue;
      }
      step.add(row);
    }
    step.publish(publisher, tracing, log, outcome);
    return outcome;
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
    int expected = outcome.publishedPositions.size() + outcome.step.failures().size();
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
    outcome.step.reportEvents(listener, log, "Publish failed (attempt {}), retrying in {}: {}");
    listener.onBatch(outcome.step.batchReport(duration));
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

  /** What to record for one batch: the step's outcomes, and the positions to mark published. */
  private static final class Outcome implements PublishStep.Answers {
    private final PublishStep step;
    private final List<Long> publishedPositions = new ArrayList<>();
    private final List<OutboxMessage> orderViolations = new ArrayList<>();
    private int recorded;

    Outcome(PublishStep step) {
      this.step = step;
    }

    @Override
    public void published(ClaimedRow row, OutboxMessage message) {
      publishedPositions.add(message.position());
    }

    @Override
    public void orderViolation(OutboxMessage message) {
      orderViolations.add(message);
    }
  }
}

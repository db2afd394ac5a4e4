package dev.pgoutbox.core;

import static dev.pgoutbox.db.jooq.Tables.PROCESSED_EVENTS;
import static java.util.Objects.requireNonNull;

import dev.pgoutbox.core.internal.Contexts;
import dev.pgoutbox.core.internal.Retention;
import dev.pgoutbox.core.internal.SearchPath;
import dev.pgoutbox.core.internal.Texts;
import dev.pgoutbox.db.OutboxSchema;
import java.sql.Connection;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.UUID;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.conf.Settings;
import org.jooq.exception.DataAccessException;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Makes a consumer's handling of each event take effect once, however often the broker delivers it:
 * the consumer records {@code (consumer, event id)} in the {@code processed_events} table in the
 * same transaction as the handler's writes.
 *
 * <pre>{@code
 * Inbox inbox = Inbox.builder().schema("outbox").build();   // once, at start-up
 *
 * // in the message listener; eventId from the broker's dedup key (Kafka header, AMQP message-id)
 * boolean ran = dsl.transactionResult(tx ->
 *     inbox.handleOnce(tx.dsl(), "billing", eventId, () ->
 *         tx.dsl().insertInto(INVOICES).set(invoiceFor(payload)).execute()));
 * // acknowledge the message after the commit, whether ran or not
 * }</pre>
 *
 * <p>Like {@link Outbox}, the inbox never begins, commits or rolls back, and refuses a connection
 * in auto-commit mode or a context on a pool rather than on the transaction. Old rows are removed
 * with {@link #purgeProcessed(DataSource, Duration, int)}, or on a schedule with {@link
 * #scheduleRetention}; the names are {@code OutboxAdmin}'s.
 *
 * <p>Immutable and thread-safe: build one and share it.
 */
public final class Inbox {

  /** Longest consumer name: the column's size. */
  public static final int MAX_CONSUMER_LENGTH = 200;

  /**
   * Largest {@code batchSize} of {@link #purgeProcessed(DataSource, Duration, int)}: {@value}. The
   * same as {@code OutboxAdmin}'s.
   */
  public static final int MAX_PURGE_BATCH_SIZE = Retention.MAX_PURGE_BATCH_SIZE;

  private static final Logger LOG = LoggerFactory.getLogger(Inbox.class);

  private final String schema;
  private final Settings settings;

  private Inbox(Builder builder) {
    this.schema = builder.schema;
    this.settings = Contexts.settings(schema);
  }

  /** A builder of an {@code Inbox}. */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * The work a consumer does for an event, in the consumer's transaction.
   *
   * @param <E> the checked exception the handler may throw ({@code RuntimeException} if none)
   */
  @FunctionalInterface
  public interface Handler<E extends Exception> {
    /** Handles the event; an exception propagates out of {@code handleOnce} unchanged. */
    void handle() throws E;
  }

  /**
   * Records that {@code consumer} handles {@code eventId} and runs {@code handler}, in the
   * transaction of {@code tx}, unless the event was already recorded for this consumer.
   *
   * <p>Runs {@code INSERT INTO processed_events ... ON CONFLICT DO NOTHING}, then the handler only
   * if the row was inserted. The row and the handler's writes commit together. If the handler
   * throws, the exception propagates unchanged and the host must roll the transaction back (jOOQ's
   * {@code transaction(...)} and Spring's {@code @Transactional} do): the row goes with it, so a
   * redelivery runs the handler again. A concurrent delivery of the same event waits for this
   * transaction, then returns {@code false} if it committed, or runs the handler if it rolled back.
   *
   * @param consumer who handles the event, e.g. {@code billing}: not blank, at most {@value
   *     #MAX_CONSUMER_LENGTH} characters
   * @return true if the handler ran, false if the event was already handled by this consumer
   * @throws E what the handler throws
   * @throws IllegalArgumentException if {@code consumer} breaks a rule (nothing was sent)
   * @throws OutboxException if {@code tx} is not in a transaction (auto-commit mode, or a context
   *     on a pool rather than on the transaction; nothing was sent), or the insert fails
   */
  public <E extends Exception> boolean handleOnce(
      DSLContext tx, String consumer, UUID eventId, Handler<E> handler) throws E {
    requireNonNull(tx, "tx");
    requireArguments(consumer, eventId, handler);
    return handle(Contexts.derive(tx, schema), consumer, eventId, handler);
  }

  /**
   * Like {@link #handleOnce(DSLContext, String, UUID, Handler)}, on a plain JDBC connection, which
   * is neither committed nor closed.
   *
   * @return true if the handler ran, false if the event was already handled by this consumer
   * @throws E what the handler throws
   * @throws IllegalArgumentException if {@code consumer} breaks a rule (nothing was sent)
   * @throws OutboxException if {@code tx} is in auto-commit mode (nothing was sent), or the insert
   *     fails
   */
  public <E extends Exception> boolean handleOnce(
      Connection tx, String consumer, UUID eventId, Handler<E> handler) throws E {
    requireNonNull(tx, "tx");
    requireArguments(consumer, eventId, handler);
    return handle(Contexts.on(tx, settings), consumer, eventId, handler);
  }

  /**
   * Deletes the inbox rows of every consumer processed more than {@code olderThan} ago (by the
   * database's clock, read once at the start), {@code batchSize} rows per transaction, until none
   * is left; rows locked by others are skipped. A redelivery older than {@code olderThan} then runs
   * its handler again: keep {@code olderThan} well above the broker's longest redelivery delay.
   *
   * <pre>{@code
   * long deleted = inbox.purgeProcessed(dataSource, Duration.ofDays(14), 1_000);
   * }</pre>
   *
   * @return the number of rows deleted
   * @throws IllegalArgumentException if {@code olderThan} is negative or {@code batchSize} is not
   *     between 1 and {@value #MAX_PURGE_BATCH_SIZE}
   * @throws OutboxException if a statement fails; the batches committed before it stay deleted
   */
  public long purgeProcessed(DataSource dataSource, Duration olderThan, int batchSize) {
    requireNonNull(dataSource, "dataSource");
    Retention.requirePurgeArguments(olderThan, batchSize);
    return purge(DSL.using(dataSource, SQLDialect.POSTGRES, settings), olderThan, batchSize);
  }

  /**
   * Like {@link #purgeProcessed(DataSource, Duration, int)} on a jOOQ context: each batch is a
   * {@code transactionResult(...)} of {@code dsl}, that is its own transaction when {@code dsl} is
   * not in one, and a savepoint of the enclosing transaction when it is.
   *
   * @return the number of rows deleted
   * @throws IllegalArgumentException if {@code olderThan} is negative or {@code batchSize} is not
   *     between 1 and {@value #MAX_PURGE_BATCH_SIZE}
   * @throws OutboxException if a statement fails
   */
  public long purgeProcessed(DSLContext dsl, Duration olderThan, int batchSize) {
    requireNonNull(dsl, "dsl");
    Retention.requirePurgeArguments(olderThan, batchSize);
    return purge(Contexts.derive(dsl, schema), olderThan, batchSize);
  }

  /**
   * Runs {@link #purgeProcessed(DataSource, Duration, int)} every {@code every} on the host's
   * executor, as {@code OutboxAdmin.scheduleRetention} does for the outbox. Failures are logged and
   * the next run tries again. Cancel the returned future to stop.
   *
   * <pre>{@code
   * inbox.scheduleRetention(executor, dataSource, Duration.ofHours(1), Duration.ofDays(14), 1_000);
   * }</pre>
   *
   * @throws IllegalArgumentException if {@code every} is not positive, {@code olderThan} is
   *     negative or {@code batchSize} is not between 1 and {@value #MAX_PURGE_BATCH_SIZE}
   */
  public ScheduledFuture<?> scheduleRetention(
      ScheduledExecutorService executor,
      DataSource dataSource,
      Duration every,
      Duration olderThan,
      int batchSize) {
    requireNonNull(dataSource, "dataSource must not be null");
    return Retention.schedule(
        executor,
        every,
        olderThan,
        batchSize,
        () -> purgeProcessed(dataSource, olderThan, batchSize),
        LOG,
        "pgoutbox-inbox[" + schema + "]",
        "processed_events rows");
  }

  /** The schema that holds the {@code processed_events} table. */
  public String schema() {
    return schema;
  }

  @Override
  public String toString() {
    return "Inbox[schema=" + schema + "]";
  }

  private <E extends Exception> boolean handle(
      DSLContext tx, String consumer, UUID eventId, Handler<E> handler) throws E {
    int inserted;
    try {
      Contexts.TransactionCheck check = Contexts.check(tx);
      if (check != Contexts.TransactionCheck.IN_TRANSACTION) {
        throw new OutboxException(
            "Inbox.handleOnce needs the consumer's transaction, but "
                + check.reason()
                + ": the inbox row would not commit with the handler's writes, so a failed"
                + " handler would never run again, or a handled event would run again. Call it"
                + " inside a transaction, on its connection or context; nothing was written");
      }
      inserted =
          tx.insertInto(PROCESSED_EVENTS, PROCESSED_EVENTS.CONSUMER, PROCESSED_EVENTS.EVENT_ID)
              .values(
                  DSL.val(consumer),
                  // Runs in the consumer's session: the type is named with its schema.
                  DSL.field(
                      "cast({0} as pg_catalog.uuid)",
                      SQLDataType.UUID, DSL.val(eventId.toString())))
              .onConflict(PROCESSED_EVENTS.CONSUMER, PROCESSED_EVENTS.EVENT_ID)
              .doNothing()
              .execute();
    } catch (DataAccessException e) {
      throw new OutboxException(
          "Could not record event "
              + eventId
              + " for consumer '"
              + consumer
              + "' in "
              + schema
              + ".processed_events: "
              + e.getMessage(),
          e);
    }
    if (inserted == 0) {
      return false;
    }
    handler.handle();
    return true;
  }

  private long purge(DSLContext dsl, Duration olderThan, int batchSize) {
    try {
      OffsetDateTime cutoff =
          dsl.select(DSL.currentOffsetDateTime()).fetchSingle().value1().minus(olderThan);
      long total = 0;
      int deleted;
      do {
        deleted =
            dsl.transactionResult(
                batch -> {
                  // Its own transaction: nothing planted on the session's path runs in it.
                  batch.dsl().connection(SearchPath::fixForTransaction);
                  return batch
                      .dsl()
                      .deleteFrom(PROCESSED_EVENTS)
                      .where(
                          DSL.row(PROCESSED_EVENTS.CONSUMER, PROCESSED_EVENTS.EVENT_ID)
                              .in(
                                  DSL.select(PROCESSED_EVENTS.CONSUMER, PROCESSED_EVENTS.EVENT_ID)
                                      .from(PROCESSED_EVENTS)
                                      .where(PROCESSED_EVENTS.PROCESSED_AT.lt(cutoff))
                                      .limit(batchSize)
                                      .forUpdate()
                                      .skipLocked()))
                      .execute();
                });
        total += deleted;
      } while (deleted == batchSize);
      return total;
    } catch (DataAccessException e) {
      throw new OutboxException(
          "Could not purge " + schema + ".processed_events: " + e.getMessage(), e);
    }
  }

  private static void requireArguments(String consumer, UUID eventId, Handler<?> handler) {
    String problem = Texts.requiredProblem("consumer", consumer, MAX_CONSUMER_LENGTH);
    if (problem != null) {
      throw new IllegalArgumentException(problem);
    }
    requireNonNull(eventId, "eventId");
    requireNonNull(handler, "handler");
  }

  /** Builds an {@link Inbox}; not thread-safe. */
  public static final class Builder {
    private String schema = OutboxSchema.DEFAULT_SCHEMA;

    private Builder() {}

    /**
     * The schema that holds the {@code processed_events} table. Default {@value
     * OutboxSchema#DEFAULT_SCHEMA}.
     *
     * @throws IllegalArgumentException if {@code schema} is not a plain lower-case identifier
     */
    public Builder schema(String schema) {
      this.schema = OutboxSchema.requireValidName(schema);
      return this;
    }

    /** The inbox. */
    public Inbox build() {
      return new Inbox(this);
    }
  }
}

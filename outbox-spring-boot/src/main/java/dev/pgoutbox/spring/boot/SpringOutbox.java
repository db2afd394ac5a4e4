package dev.pgoutbox.spring.boot;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.core.OutboxException;
import java.sql.Connection;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Appends events in the current Spring transaction: the connection bound to it by Spring's
 * transaction manager ({@code @Transactional}, {@code TransactionTemplate}; the same connection
 * {@code JdbcTemplate} uses), so the events commit or roll back with the business rows.
 *
 * <pre>{@code
 * @Transactional
 * public void placeOrder(Order order) {
 *   jdbc.update("INSERT INTO orders ...", ...);
 *   outbox.append(OutboxEvent.of("order", order.id(), "order.placed", order));
 * }
 * }</pre>
 *
 * <p>Without a transaction, or in one that holds no connection of this {@code DataSource} (another
 * data source's transaction manager, a Kafka or JMS one), {@code append} refuses and writes
 * nothing: the event would otherwise commit apart from the business rows, or be rolled back while
 * they commit. Thread-safe; the starter declares one.
 */
public final class SpringOutbox {

  private final Outbox outbox;
  private final DataSource dataSource;

  /** An outbox writing through the transaction-bound connections of {@code dataSource}. */
  public SpringOutbox(Outbox outbox, DataSource dataSource) {
    this.outbox = requireNonNull(outbox, "outbox must not be null");
    this.dataSource = requireNonNull(dataSource, "dataSource must not be null");
  }

  /**
   * Appends one event in the current Spring transaction.
   *
   * @return the event's id
   * @throws OutboxException if no Spring transaction is active, or the active one holds no
   *     connection of this outbox's {@code DataSource} (nothing was written), or the insert fails
   *     (the transaction must then roll back, which Spring does when the exception leaves a
   *     {@code @Transactional} method)
   * @throws dev.pgoutbox.core.InvalidEventException if the event is refused; nothing was written
   */
  public UUID append(OutboxEvent event) {
    requireNonNull(event, "event");
    return withConnection(connection -> outbox.append(connection, event));
  }

  /**
   * Appends {@code events}, in their order, in the current Spring transaction (see {@link
   * Outbox#appendAll(Connection, List)}).
   *
   * @return the events' ids, in order
   * @throws OutboxException if no Spring transaction is active, or the active one holds no
   *     connection of this outbox's {@code DataSource} (nothing was written), or the insert fails
   */
  public List<UUID> appendAll(List<OutboxEvent> events) {
    requireNonNull(events, "events");
    return withConnection(connection -> outbox.appendAll(connection, events));
  }

  /** The underlying outbox, for code that passes a jOOQ {@code DSLContext} or a connection. */
  public Outbox outbox() {
    return outbox;
  }

  private <T> T withConnection(java.util.function.Function<Connection, T> action) {
    if (!TransactionSynchronizationManager.isActualTransactionActive()) {
      throw new OutboxException(
          "pgoutbox: append needs a Spring transaction, and none is active on this thread: the"
              + " event would commit on its own, apart from the business rows. Call it from a"
              + " @Transactional method or inside TransactionTemplate.execute(...); nothing was"
              + " written");
    }
    // A transaction of another DataSource (or a Kafka or JMS transaction manager) binds no
    // connection of this one: DataSourceUtils would hand out a connection of its own, which commits
    // apart from the business rows, or, in a manual-commit pool, is rolled back when released.
    if (TransactionSynchronizationManager.getResource(dataSource) == null) {
      throw new OutboxException(
          "pgoutbox: append needs the Spring transaction to hold a connection of the outbox's"
              + " DataSource, and the active one is not on the outbox's DataSource (its"
              + " transaction manager is for another DataSource, or is a Kafka or JMS one): the"
              + " event would not commit with the business rows. Run it under a transaction"
              + " manager of "
              + dataSource
              + ", or give SpringOutbox the DataSource your transaction manager uses; nothing"
              + " was written");
    }
    Connection connection = DataSourceUtils.getConnection(dataSource);
    try {
      return action.apply(connection);
    } finally {
      DataSourceUtils.releaseConnection(connection, dataSource);
    }
  }

  @Override
  public String toString() {
    return "SpringOutbox[" + outbox + "]";
  }
}

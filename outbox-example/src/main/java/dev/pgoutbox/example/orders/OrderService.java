package dev.pgoutbox.example.orders;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Places, pays and cancels orders. Each change writes the order's rows and appends its event to the
 * outbox in one transaction, so the event exists if and only if the change committed.
 *
 * <pre>{@code
 * OrderService orders = new OrderService(dataSource, "shop", outbox, registry);
 * Order order = orders.place(NewOrder.from(json));
 * OrderService.Change paid = orders.pay(order.id());
 * }</pre>
 *
 * Plain JDBC; table names are qualified with the schema given at construction. Thread-safe.
 */
public final class OrderService {

  private final DataSource dataSource;
  private final String schema;
  private final Outbox outbox;
  private final MeterRegistry registry;
  private final ConcurrentMap<String, Counter> eventCounters = new ConcurrentHashMap<>();

  /**
   * A service on {@code schema} (which holds both the example's and the outbox's tables).
   *
   * @param outbox the writer, built for the same schema
   * @param registry where {@code orders_events_appended_total{event_type}} is counted
   */
  public OrderService(DataSource dataSource, String schema, Outbox outbox, MeterRegistry registry) {
    this.dataSource = requireNonNull(dataSource, "dataSource");
    this.schema = requireNonNull(schema, "schema");
    this.outbox = requireNonNull(outbox, "outbox");
    this.registry = requireNonNull(registry, "registry");
  }

  /** The outcome of a state change. */
  public sealed interface Change {
    /** The change committed; {@code order} is the order after it. */
    record Done(Order order) implements Change {}

    /** No such order. */
    record NotFound(UUID id) implements Change {}

    /** The order's state forbids the change; nothing was written. */
    record Refused(Order order, String reason) implements Change {}
  }

  /** Inserts the order and its lines and appends {@code order.created}, in one transaction. */
  public Order place(NewOrder request) {
    requireNonNull(request, "request");
    UUID id = UUID.randomUUID();
    BigDecimal total = request.total();
    Order order =
        Transactions.inTransaction(
            dataSource,
            tx -> {
              try (PreparedStatement insert =
                  tx.prepareStatement(
                      "INSERT INTO "
                          + schema
                          + ".orders (id, customer_id, status, version, total)"
                          + " VALUES (?, ?, 'CREATED', 1, ?)")) {
                insert.setObject(1, id);
                insert.setString(2, request.customerId());
                insert.setBigDecimal(3, total);
                insert.executeUpdate();
              }
              try (PreparedStatement line =
                  tx.prepareStatement(
                      "INSERT INTO "
                          + schema
                          + ".order_items (order_id, line, sku, quantity, unit_price)"
                          + " VALUES (?, ?, ?, ?, ?)")) {
                int n = 1;
                for (Order.Item item : request.items()) {
                  line.setObject(1, id);
                  line.setInt(2, n++);
                  line.setString(3, item.sku());
                  line.setInt(4, item.quantity());
                  line.setBigDecimal(5, item.unitPrice());
                  line.addBatch();
                }
                line.executeBatch();
              }
              outbox.append(
                  tx,
                  OutboxEvent.of(
                      OrderEvents.AGGREGATE_TYPE,
                      id.toString(),
                      OrderEvents.CREATED,
                      new OrderEvents.Created(
                          id, 1, request.customerId(), request.items(), total)));
              return load(tx, id, false);
            });
    counted(OrderEvents.CREATED);
    return requireNonNull(order);
  }

  /**
   * Marks a {@code CREATED} order paid and appends {@code order.paid}, in one transaction. Refused
   * for an order already paid or cancelled.
   */
  public Change pay(UUID id) {
    requireNonNull(id, "id");
    Change change =
        Transactions.inTransaction(
            dataSource,
            tx -> {
              Order order = load(tx, id, true);
              if (order == null) {
                return new Change.NotFound(id);
              }
              if (order.status() != Order.Status.CREATED) {
                return new Change.Refused(
                    order,
                    order.status() == Order.Status.PAID
                        ? "order " + id + " is already paid"
                        : "order " + id + " is cancelled and can no longer be paid");
              }
              int version = update(tx, id, Order.Status.PAID);
              outbox.append(
                  tx,
                  OutboxEvent.of(
                      OrderEvents.AGGREGATE_TYPE,
                      id.toString(),
                      OrderEvents.PAID,
                      new OrderEvents.Paid(id, version, order.total())));
              return new Change.Done(requireNonNull(load(tx, id, false)));
            });
    if (change instanceof Change.Done) {
      counted(OrderEvents.PAID);
    }
    return change;
  }

  /**
   * Cancels a {@code CREATED} or {@code PAID} order and appends {@code order.cancelled}, in one
   * transaction. Refused for an order already cancelled.
   */
  public Change cancel(UUID id) {
    requireNonNull(id, "id");
    Change change =
        Transactions.inTransaction(
            dataSource,
            tx -> {
              Order order = load(tx, id, true);
              if (order == null) {
                return new Change.NotFound(id);
              }
              if (order.status() == Order.Status.CANCELLED) {
                return new Change.Refused(order, "order " + id + " is already cancelled");
              }
              int version = update(tx, id, Order.Status.CANCELLED);
              outbox.append(
                  tx,
                  OutboxEvent.of(
                      OrderEvents.AGGREGATE_TYPE,
                      id.toString(),
                      OrderEvents.CANCELLED,
                      new OrderEvents.Cancelled(id, version, order.status())));
              return new Change.Done(requireNonNull(load(tx, id, false)));
            });
    if (change instanceof Change.Done) {
      counted(OrderEvents.CANCELLED);
    }
    return change;
  }

  /** The order, if it exists. */
  public Optional<Order> find(UUID id) {
    requireNonNull(id, "id");
    return Optional.ofNullable(Transactions.inTransaction(dataSource, tx -> load(tx, id, false)));
  }

  private int update(Connection tx, UUID id, Order.Status status) throws SQLException {
    try (PreparedStatement update =
        tx.prepareStatement(
            "UPDATE "
                + schema
                + ".orders SET status = ?, version = version + 1, updated_at = now()"
                + " WHERE id = ? RETURNING version")) {
      update.setString(1, status.name());
      update.setObject(2, id);
      try (ResultSet rs = update.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    }
  }

  private @Nullable Order load(Connection tx, UUID id, boolean forUpdate) throws SQLException {
    String customerId;
    Order.Status status;
    int version;
    BigDecimal total;
    Instant createdAt;
    Instant updatedAt;
    try (PreparedStatement select =
        tx.prepareStatement(
            "SELECT customer_id, status, version, total, created_at, updated_at FROM "
                + schema
                + ".orders WHERE id = ?"
                + (forUpdate ? " FOR UPDATE" : ""))) {
      select.setObject(1, id);
      try (ResultSet rs = select.executeQuery()) {
        if (!rs.next()) {
          return null;
        }
        customerId = rs.getString(1);
        status = Order.Status.valueOf(rs.getString(2));
        version = rs.getInt(3);
        total = rs.getBigDecimal(4);
        createdAt = rs.getObject(5, java.time.OffsetDateTime.class).toInstant();
        updatedAt = rs.getObject(6, java.time.OffsetDateTime.class).toInstant();
      }
    }
    List<Order.Item> items = new ArrayList<>();
    try (PreparedStatement select =
        tx.prepareStatement(
            "SELECT sku, quantity, unit_price FROM "
                + schema
                + ".order_items WHERE order_id = ? ORDER BY line")) {
      select.setObject(1, id);
      try (ResultSet rs = select.executeQuery()) {
        while (rs.next()) {
          items.add(new Order.Item(rs.getString(1), rs.getInt(2), rs.getBigDecimal(3)));
        }
      }
    }
    return new Order(
        id, customerId, status, version, List.copyOf(items), total, createdAt, updatedAt);
  }

  private void counted(String eventType) {
    eventCounters
        .computeIfAbsent(
            eventType,
            t ->
                Counter.builder("orders.events.appended")
                    .description("Order events appended to the outbox (committed)")
                    .tag("event_type", t)
                    .register(registry))
        .increment();
  }
}

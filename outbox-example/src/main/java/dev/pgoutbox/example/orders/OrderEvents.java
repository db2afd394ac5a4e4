package dev.pgoutbox.example.orders;

import java.math.BigDecimal;
import java.util.List;
import java.util.UUID;

/**
 * The events the order service appends to the outbox (aggregate type {@value #AGGREGATE_TYPE},
 * aggregate id = the order id). Every payload carries the order's {@code version} after the change,
 * so a consumer can tell whether an event follows the last one it applied.
 */
public final class OrderEvents {

  /** The outbox aggregate type of orders. */
  public static final String AGGREGATE_TYPE = "order";

  /** Event type of an order placed. */
  public static final String CREATED = "order.created";

  /** Event type of an order paid. */
  public static final String PAID = "order.paid";

  /** Event type of an order cancelled. */
  public static final String CANCELLED = "order.cancelled";

  private OrderEvents() {}

  /**
   * Payload of {@value #CREATED}.
   *
   * @param orderId the order
   * @param version always 1
   * @param customerId who ordered
   * @param items the lines
   * @param total the amount due
   */
  public record Created(
      UUID orderId, int version, String customerId, List<Order.Item> items, BigDecimal total) {}

  /**
   * Payload of {@value #PAID}.
   *
   * @param orderId the order
   * @param version the order's version after payment
   * @param amount the amount paid
   */
  public record Paid(UUID orderId, int version, BigDecimal amount) {}

  /**
   * Payload of {@value #CANCELLED}.
   *
   * @param orderId the order
   * @param version the order's version after cancellation
   * @param previousStatus the status before cancelling
   */
  public record Cancelled(UUID orderId, int version, Order.Status previousStatus) {}
}

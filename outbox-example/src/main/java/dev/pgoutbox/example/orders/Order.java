package dev.pgoutbox.example.orders;

import java.math.BigDecimal;
import java.time.Instant;
import java.util.List;
import java.util.UUID;

/**
 * An order as stored and as the API returns it.
 *
 * @param id the order id (also the outbox aggregate id)
 * @param customerId who ordered
 * @param status {@code CREATED}, {@code PAID} or {@code CANCELLED}
 * @param version 1 when created, one more per change; carried by every event
 * @param items the order lines
 * @param total sum of quantity times unit price
 * @param createdAt when it was placed
 * @param updatedAt when it last changed
 */
public record Order(
    UUID id,
    String customerId,
    Status status,
    int version,
    List<Item> items,
    BigDecimal total,
    Instant createdAt,
    Instant updatedAt) {

  /** Where an order is in its life. */
  public enum Status {
    /** Placed, not paid. */
    CREATED,
    /** Paid; shipping prepares a shipment. */
    PAID,
    /** Cancelled; any shipment is cancelled. */
    CANCELLED
  }

  /**
   * One order line.
   *
   * @param sku the product
   * @param quantity how many, at least 1
   * @param unitPrice price of one, two decimals
   */
  public record Item(String sku, int quantity, BigDecimal unitPrice) {}
}

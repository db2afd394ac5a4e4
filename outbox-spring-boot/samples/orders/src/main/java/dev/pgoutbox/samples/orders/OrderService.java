package dev.pgoutbox.samples.orders;

import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.spring.boot.SpringOutbox;
import java.math.BigDecimal;
import java.util.Map;
import java.util.UUID;
import org.springframework.http.HttpStatus;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.web.bind.annotation.ResponseStatus;

/** Places orders: the row and its event commit together, or neither does. */
@Service
public class OrderService {

  /** What one customer may have ordered in total. */
  static final BigDecimal CREDIT_LIMIT = new BigDecimal("1000.00");

  private final JdbcTemplate jdbc;
  private final SpringOutbox outbox;

  public OrderService(JdbcTemplate jdbc, SpringOutbox outbox) {
    this.jdbc = jdbc;
    this.outbox = outbox;
  }

  /** An order placed, with the id of its {@code order.placed} event. */
  public record Placed(UUID orderId, UUID eventId) {}

  /**
   * Places an order. Over the customer's credit limit the exception rolls the transaction back: the
   * order row and its event vanish together, and nothing is published.
   */
  @Transactional
  public Placed place(String customer, BigDecimal total) {
    UUID orderId = UUID.randomUUID();
    jdbc.update(
        "INSERT INTO orders (id, customer, total) VALUES (?, ?, ?)", orderId, customer, total);
    UUID eventId =
        outbox.append(
            OutboxEvent.of(
                "order",
                orderId.toString(),
                "order.placed",
                Map.of("orderId", orderId, "customer", customer, "total", total)));
    BigDecimal ordered =
        jdbc.queryForObject(
            "SELECT sum(total) FROM orders WHERE customer = ?", BigDecimal.class, customer);
    if (ordered != null && ordered.compareTo(CREDIT_LIMIT) > 0) {
      throw new CreditLimitExceeded(customer, ordered);
    }
    return new Placed(orderId, eventId);
  }

  /** The customer's orders would pass {@link #CREDIT_LIMIT}: answered 409. */
  @ResponseStatus(HttpStatus.CONFLICT)
  public static final class CreditLimitExceeded extends RuntimeException {
    private static final long serialVersionUID = 1L;

    CreditLimitExceeded(String customer, BigDecimal ordered) {
      super(customer + " would have ordered " + ordered + ", over the limit of " + CREDIT_LIMIT);
    }
  }
}

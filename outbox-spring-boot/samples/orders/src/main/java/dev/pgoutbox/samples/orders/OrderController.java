package dev.pgoutbox.samples.orders;

import java.math.BigDecimal;
import org.springframework.http.HttpStatus;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.ResponseStatus;
import org.springframework.web.bind.annotation.RestController;

/** {@code POST /orders {"customer": "ada", "total": 42.50}}. */
@RestController
public class OrderController {

  private final OrderService orders;

  public OrderController(OrderService orders) {
    this.orders = orders;
  }

  /** The order to place. */
  public record PlaceOrder(String customer, BigDecimal total) {}

  @PostMapping("/orders")
  @ResponseStatus(HttpStatus.CREATED)
  public OrderService.Placed place(@RequestBody PlaceOrder order) {
    return orders.place(order.customer(), order.total());
  }
}

package dev.pgoutbox.samples.orders;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * An order service on pgoutbox's Spring Boot starter: {@code POST /orders} writes the order and its
 * {@code order.placed} event in one transaction ({@link OrderService}); the starter's relay
 * publishes the event to RabbitMQ; {@link OrderPlacedListener} receives it.
 */
@SpringBootApplication
public class OrdersApplication {

  public static void main(String[] args) {
    SpringApplication.run(OrdersApplication.class, args);
  }
}

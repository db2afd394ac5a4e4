package dev.pgoutbox.docs.snippets;

import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.docs.snippets.Shop.Order;
import dev.pgoutbox.spring.boot.SpringOutbox;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

// docs/spring-boot.md
// snippet:start orders-service
@Service
class Orders {
  private final JdbcTemplate jdbc;
  private final SpringOutbox outbox;

  Orders(JdbcTemplate jdbc, SpringOutbox outbox) {
    this.jdbc = jdbc;
    this.outbox = outbox;
  }

  @Transactional
  public void place(Order order) {
    jdbc.update("INSERT INTO orders (id, total) VALUES (?, ?)", order.id(), order.total());
    outbox.append(OutboxEvent.of("order", order.id(), "order.placed", order));
  } // commit: the relay publishes the event. An exception: rollback, the event never existed.
}
// snippet:end orders-service

package dev.pgoutbox.spring.boot;

import dev.pgoutbox.core.OutboxEvent;
import java.util.Map;
import java.util.UUID;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Transactional;

/**
 * The host's service in the {@code @SpringBootTest}s: the business row and its event in one
 * {@code @Transactional} method, on the {@code orders} table of the test's schema.
 */
public class Orders {

  /** The table every test schema gets for this service. */
  static final String TABLE_DDL = "CREATE TABLE %s.orders (id text PRIMARY KEY)";

  private final JdbcTemplate jdbc;
  private final SpringOutbox outbox;

  public Orders(JdbcTemplate jdbc, SpringOutbox outbox) {
    this.jdbc = jdbc;
    this.outbox = outbox;
  }

  /** Inserts the order and appends {@code order.placed}; {@code fail} throws after both. */
  @Transactional
  public UUID place(String id, boolean fail) {
    jdbc.update("INSERT INTO orders (id) VALUES (?)", id);
    UUID eventId = outbox.append(OutboxEvent.of("order", id, "order.placed", Map.of("id", id)));
    if (fail) {
      throw new IllegalStateException("payment refused for " + id);
    }
    return eventId;
  }
}

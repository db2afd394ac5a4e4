package dev.pgoutbox.spring.boot;

import dev.pgoutbox.testing.TestSchema;
import java.util.function.Supplier;
import org.springframework.test.context.DynamicPropertyRegistry;

/** What the {@code @SpringBootTest}s of this module share: the database and the brokers. */
final class BootTests {

  /** The machine's RabbitMQ (guest/guest). */
  static final String RABBITMQ_HOST =
      System.getenv().getOrDefault("PGOUTBOX_TEST_RABBITMQ_HOST", "127.0.0.1");

  static final int RABBITMQ_PORT =
      Integer.parseInt(System.getenv().getOrDefault("PGOUTBOX_TEST_RABBITMQ_PORT", "5672"));

  /** The machine's NATS with JetStream. */
  static final String NATS_URL =
      System.getenv().getOrDefault("PGOUTBOX_TEST_NATS_URL", "nats://127.0.0.1:4222");

  private BootTests() {}

  /**
   * The application's data source on {@code db}'s schema, which also holds the outbox, and the
   * settings every {@code @SpringBootTest} here shares.
   */
  static void database(DynamicPropertyRegistry registry, TestSchema db) {
    database(registry, db, db::jdbcUrl);
  }

  /** {@link #database(DynamicPropertyRegistry, TestSchema)} reached at {@code jdbcUrl}. */
  static void database(DynamicPropertyRegistry registry, TestSchema db, Supplier<Object> jdbcUrl) {
    registry.add("spring.datasource.url", jdbcUrl);
    registry.add("spring.datasource.hikari.maximum-pool-size", () -> 4);
    registry.add("pgoutbox.schema", db::schema);
    registry.add("pgoutbox.relay.poll-interval", () -> "200ms");
    registry.add("spring.main.banner-mode", () -> "off");
    registry.add("spring.jpa.open-in-view", () -> false);
    // These hosts create their tables in the test; HostFlywayIT is the one that uses Boot's Flyway.
    registry.add("spring.flyway.enabled", () -> false);
  }
}

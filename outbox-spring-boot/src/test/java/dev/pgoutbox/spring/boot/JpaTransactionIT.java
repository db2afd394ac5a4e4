package dev.pgoutbox.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import jakarta.persistence.EntityManager;
import jakarta.persistence.PersistenceContext;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.orm.jpa.JpaTransactionManager;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.annotation.Transactional;

/**
 * {@code SpringOutbox.append} in a JPA (Hibernate) application, under Boot's {@link
 * JpaTransactionManager}: the event is written in Hibernate's own transaction, so commit publishes
 * it with the entity and rollback drops both.
 */
@SpringBootTest(classes = JpaTransactionIT.App.class, properties = "pgoutbox.relay.name=boot-jpa")
@DirtiesContext
class JpaTransactionIT {

  @RegisterExtension static final TestSchema db = TestSchema.empty();

  /** The JPA host's service. */
  public static class PurchaseOrders {
    @PersistenceContext private EntityManager entityManager;
    private final SpringOutbox outbox;
    private final JdbcTemplate jdbc;

    public PurchaseOrders(SpringOutbox outbox, JdbcTemplate jdbc) {
      this.outbox = outbox;
      this.jdbc = jdbc;
    }

    /**
     * Persists the order and appends its event; returns the event id. Inside the transaction,
     * Hibernate sees the event and JDBC sees the flushed entity: one connection, one transaction.
     */
    @Transactional
    public UUID place(String id, boolean fail) {
      entityManager.persist(new PurchaseOrder(id));
      entityManager.flush();
      UUID eventId =
          outbox.append(OutboxEvent.of("purchase-order", id, "purchase-order.placed", Map.of()));
      Number seenByHibernate =
          (Number)
              entityManager
                  .createNativeQuery("SELECT count(*) FROM outbox_events WHERE id = :id")
                  .setParameter("id", eventId)
                  .getSingleResult();
      Long seenByJdbc =
          jdbc.queryForObject("SELECT count(*) FROM purchase_orders WHERE id = ?", Long.class, id);
      if (seenByHibernate.longValue() != 1 || seenByJdbc == null || seenByJdbc != 1) {
        throw new AssertionError(
            "not one transaction: Hibernate sees the event "
                + seenByHibernate
                + " time(s), JDBC sees the entity "
                + seenByJdbc
                + " time(s)");
      }
      if (fail) {
        throw new IllegalStateException("payment refused for " + id);
      }
      return eventId;
    }
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import(PurchaseOrders.class)
  static class App {
    @Bean
    RecordingPublisher publisher() {
      return new RecordingPublisher();
    }
  }

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    BootTests.database(registry, db);
  }

  @BeforeAll
  static void ordersTable() {
    db.execute("CREATE TABLE " + db.schema() + ".purchase_orders (id text PRIMARY KEY)");
  }

  @AfterAll
  static void stopTheRelay(@Autowired OutboxRelayLifecycle relay) {
    relay.stop(); // before the schema is dropped
  }

  @Autowired PurchaseOrders orders;
  @Autowired RecordingPublisher publisher;
  @Autowired PlatformTransactionManager transactions;

  @Test
  void appendJoinsTheJpaTransactionCommitPublishesRollbackDrops() {
    assertThat(transactions).isInstanceOf(JpaTransactionManager.class);

    assertThatThrownBy(() -> orders.place("jpa-rolled-back", true))
        .hasMessageContaining("payment refused");
    UUID committed = orders.place("jpa-committed", false);

    Eventually.await(
        "jpa-committed published",
        Duration.ofSeconds(15),
        () -> publisher.published("jpa-committed"));
    assertThat(publisher.delivered())
        .singleElement()
        .satisfies(m -> assertThat(m.id()).isEqualTo(committed));
    assertThat(count("outbox_events", "aggregate_id = 'jpa-rolled-back'")).isZero();
    assertThat(count("purchase_orders", "id = 'jpa-rolled-back'")).isZero();
    assertThat(count("purchase_orders", "id = 'jpa-committed'")).isOne();
  }

  private static long count(String table, String where) {
    return db.queryLong("SELECT count(*) FROM " + db.schema() + "." + table + " WHERE " + where);
  }
}

package dev.pgoutbox.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.jooq.impl.DSL.field;
import static org.jooq.impl.DSL.table;

import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.impl.DSL;
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
import org.springframework.jdbc.support.JdbcTransactionManager;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.annotation.Transactional;

/**
 * Appending in an application on Boot's jOOQ starter: its {@code DSLContext} (transaction-aware
 * data source, Spring transaction provider) and the outbox share the Spring transaction, whether it
 * is opened by {@code @Transactional} or by jOOQ's own {@code dsl.transaction(...)}; and {@code
 * Outbox.append(dsl, event)} with Boot's {@code DSLContext} joins it as well.
 */
@SpringBootTest(
    classes = JooqTransactionIT.App.class,
    properties = {
      "pgoutbox.relay.name=boot-jooq",
      // A jOOQ application: no JPA, so the transaction manager is the JDBC one.
      "spring.autoconfigure.exclude="
          + "org.springframework.boot.hibernate.autoconfigure.HibernateJpaAutoConfiguration,"
          + "org.springframework.boot.data.jpa.autoconfigure.DataJpaRepositoriesAutoConfiguration,"
          // and, as every test here but OutboxEndpointSecurityIT, no Spring Security
          // (src/test/resources/application.properties, which this list replaces).
          + "org.springframework.boot.security.autoconfigure.SecurityAutoConfiguration,"
          + "org.springframework.boot.security.autoconfigure.UserDetailsServiceAutoConfiguration,"
          + "org.springframework.boot.security.autoconfigure.web.servlet."
          + "ServletWebSecurityAutoConfiguration,"
          + "org.springframework.boot.security.autoconfigure.web.servlet."
          + "SecurityFilterAutoConfiguration,"
          + "org.springframework.boot.security.autoconfigure.actuate.web.servlet."
          + "ManagementWebSecurityAutoConfiguration"
    })
@DirtiesContext
class JooqTransactionIT {

  @RegisterExtension static final TestSchema db = TestSchema.empty();

  /** The jOOQ host's service. */
  public static class JooqOrders {
    private final DSLContext dsl;
    private final SpringOutbox springOutbox;
    private final Outbox outbox;

    public JooqOrders(DSLContext dsl, SpringOutbox springOutbox, Outbox outbox) {
      this.dsl = dsl;
      this.springOutbox = springOutbox;
      this.outbox = outbox;
    }

    /** The order, its event through SpringOutbox and an audit event through Boot's DSLContext. */
    @Transactional
    public List<UUID> place(String id, boolean fail) {
      return write(dsl, id, fail);
    }

    /** The same, in jOOQ's own transaction, which Boot hands to Spring's transaction manager. */
    public List<UUID> placeInJooqTransaction(String id, boolean fail) {
      return dsl.transactionResult(configuration -> write(DSL.using(configuration), id, fail));
    }

    private List<UUID> write(DSLContext tx, String id, boolean fail) {
      tx.insertInto(table("orders"), field("id")).values(id).execute();
      UUID placed = springOutbox.append(OutboxEvent.of("order", id, "order.placed", Map.of()));
      UUID audited = outbox.append(tx, OutboxEvent.of("order", id, "order.audited", Map.of()));
      int visible = tx.fetchCount(table("outbox_events"), field("id").in(placed, audited));
      if (visible != 2) {
        throw new AssertionError("not one transaction: jOOQ sees " + visible + " of 2 events");
      }
      if (fail) {
        throw new IllegalStateException("payment refused for " + id);
      }
      return List.of(placed, audited);
    }
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import(JooqOrders.class)
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
    db.execute(Orders.TABLE_DDL.formatted(db.schema()));
  }

  @AfterAll
  static void stopTheRelay(@Autowired OutboxRelayLifecycle relay) {
    relay.stop(); // before the schema is dropped
  }

  @Autowired JooqOrders orders;
  @Autowired RecordingPublisher publisher;
  @Autowired PlatformTransactionManager transactions;

  @Test
  void transactionalCommitPublishesBothEventsAndRollbackDropsThem() {
    assertThat(transactions).isInstanceOf(JdbcTransactionManager.class);
    assertThatThrownBy(() -> orders.place("jq-rolled-back", true))
        .hasMessageContaining("payment refused");
    List<UUID> committed = orders.place("jq-committed", false);

    awaitPublished(committed);
    assertThat(count("outbox_events", "aggregate_id = 'jq-rolled-back'")).isZero();
    assertThat(count("orders", "id = 'jq-rolled-back'")).isZero();
    assertThat(publisher.published("jq-rolled-back")).isFalse();
  }

  @Test
  void jooqsOwnTransactionCommitPublishesAndRollbackDrops() {
    assertThatThrownBy(() -> orders.placeInJooqTransaction("jt-rolled-back", true))
        .hasMessageContaining("payment refused");
    List<UUID> committed = orders.placeInJooqTransaction("jt-committed", false);

    awaitPublished(committed);
    assertThat(count("outbox_events", "aggregate_id = 'jt-rolled-back'")).isZero();
    assertThat(count("orders", "id = 'jt-rolled-back'")).isZero();
    assertThat(publisher.published("jt-rolled-back")).isFalse();
  }

  private void awaitPublished(List<UUID> ids) {
    Eventually.await(
        ids + " published",
        Duration.ofSeconds(15),
        () -> publisher.delivered().stream().map(m -> m.id()).toList().containsAll(ids));
  }

  private static long count(String table, String where) {
    return db.queryLong("SELECT count(*) FROM " + db.schema() + "." + table + " WHERE " + where);
  }
}

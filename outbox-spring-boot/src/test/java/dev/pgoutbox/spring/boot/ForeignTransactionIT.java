package dev.pgoutbox.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.testing.TestSchema;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * {@code SpringOutbox} inside a Spring transaction that is not on its {@code DataSource}: another
 * pool's transaction manager (an application with two data sources, or a Kafka or JMS transaction
 * manager) makes a transaction active while the outbox's pool has none. The outbox must refuse
 * rather than write the event on a connection of its own: with a pool in manual-commit mode ({@code
 * spring.datasource.hikari.auto-commit=false}, common with JPA) that connection was rolled back
 * when Spring released it, so the business rows committed and their event was lost without an
 * error.
 */
class ForeignTransactionIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  /** The pool the outbox writes through; manual commit, as JPA applications often configure. */
  private static HikariDataSource outboxPool;

  /** Another pool on the same database, with its own transaction manager. */
  private static HikariDataSource otherPool;

  private static SpringOutbox springOutbox;

  @BeforeAll
  static void setUp() {
    db.execute("CREATE TABLE orders (id text PRIMARY KEY)");
    outboxPool = db.newManualCommitPool(3, "foreign-tx-outbox");
    otherPool = db.newManualCommitPool(3, "foreign-tx-other");
    springOutbox = new SpringOutbox(Outbox.builder().schema(db.schema()).build(), outboxPool);
  }

  @AfterAll
  static void close() {
    outboxPool.close();
    otherPool.close();
  }

  @BeforeEach
  void empty() {
    db.execute("TRUNCATE orders, outbox_events");
  }

  @Test
  void appendInAnotherDataSourcesTransactionIsRefusedAndWritesNothing() {
    TransactionTemplate otherTransaction =
        new TransactionTemplate(new DataSourceTransactionManager(otherPool));

    assertThatThrownBy(
            () ->
                otherTransaction.executeWithoutResult(
                    status -> {
                      new JdbcTemplate(otherPool).update("INSERT INTO orders VALUES ('o-1')");
                      springOutbox.append(OutboxEvent.of("order", "o-1", "order.placed", Map.of()));
                    }))
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("not on the outbox's DataSource")
        .hasMessageContaining("nothing was written");

    assertThat(db.queryLong("SELECT count(*) FROM orders")).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM outbox_events")).isZero();
  }

  @Test
  void appendAllInAnotherDataSourcesTransactionIsRefusedToo() {
    TransactionTemplate otherTransaction =
        new TransactionTemplate(new DataSourceTransactionManager(otherPool));

    assertThatThrownBy(
            () ->
                otherTransaction.executeWithoutResult(
                    status ->
                        springOutbox.appendAll(
                            List.of(OutboxEvent.of("order", "o-2", "order.placed", Map.of())))))
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("not on the outbox's DataSource");

    assertThat(db.queryLong("SELECT count(*) FROM outbox_events")).isZero();
  }

  @Test
  void appendInTheOutboxDataSourcesTransactionCommitsAndRollsBackWithIt() {
    TransactionTemplate transaction =
        new TransactionTemplate(new DataSourceTransactionManager(outboxPool));

    transaction.executeWithoutResult(
        status -> {
          new JdbcTemplate(outboxPool).update("INSERT INTO orders VALUES ('o-3')");
          springOutbox.append(OutboxEvent.of("order", "o-3", "order.placed", Map.of()));
        });
    assertThatThrownBy(
            () ->
                transaction.executeWithoutResult(
                    status -> {
                      new JdbcTemplate(outboxPool).update("INSERT INTO orders VALUES ('o-4')");
                      springOutbox.append(OutboxEvent.of("order", "o-4", "order.placed", Map.of()));
                      throw new IllegalStateException("payment refused");
                    }))
        .isInstanceOf(IllegalStateException.class);

    assertThat(db.queryString("SELECT string_agg(id, ',') FROM orders")).isEqualTo("o-3");
    assertThat(db.queryString("SELECT string_agg(aggregate_id, ',') FROM outbox_events"))
        .isEqualTo("o-3");
  }
}

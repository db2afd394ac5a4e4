package dev.pgoutbox.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.testing.TestSchema;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.jooq.impl.DataSourceConnectionProvider;
import org.jooq.impl.DefaultConfiguration;
import org.jooq.impl.ThreadLocalTransactionProvider;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A {@code DSLContext} on a connection pool rather than on the transaction, the classic slip of
 * passing the outer context inside a jOOQ {@code transaction(...)} lambda: each of its statements
 * takes a pooled connection of its own. In a pool with auto-commit on, the event would commit apart
 * from the business rows; in a manual-commit pool (a common setting) it was rolled back when
 * released while the business rows committed, without an error. Both the outbox and the inbox
 * refuse such a context; the contexts that do run on the transaction keep working.
 */
class PooledContextIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static HikariDataSource manualCommitPool;
  private static DSLContext pooled;
  private static Inbox inbox;

  @BeforeAll
  static void setUp() {
    db.execute("CREATE TABLE orders (id text PRIMARY KEY)");
    manualCommitPool = db.newManualCommitPool(4, "pooled-context");
    pooled = DSL.using(manualCommitPool, SQLDialect.POSTGRES);
    inbox = Inbox.builder().schema(db.schema()).build();
  }

  @AfterAll
  static void close() {
    manualCommitPool.close();
  }

  @BeforeEach
  void empty() {
    db.execute("TRUNCATE orders, outbox_events, processed_events");
  }

  private static Outbox outbox() {
    return Outbox.builder().schema(db.schema()).build();
  }

  private static OutboxEvent placed(String id) {
    return OutboxEvent.of("order", id, "order.placed", Map.of());
  }

  @Test
  void theOuterContextInsideAJooqTransactionIsRefusedAndNothingCommits() {
    assertThatThrownBy(
            () ->
                pooled.transaction(
                    configuration -> {
                      DSL.using(configuration).execute("INSERT INTO orders VALUES ('o-1')");
                      outbox().append(pooled, placed("o-1"));
                    }))
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("hands out another connection for each statement")
        .hasMessageContaining("nothing was written");

    assertThat(db.queryLong("SELECT count(*) FROM orders")).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM outbox_events")).isZero();
  }

  @Test
  void appendAllOnAPooledContextIsRefusedToo() {
    assertThatThrownBy(
            () ->
                pooled.transaction(
                    configuration -> outbox().appendAll(pooled, List.of(placed("o-2")))))
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("hands out another connection for each statement");

    assertThat(db.queryLong("SELECT count(*) FROM outbox_events")).isZero();
  }

  @Test
  void theTransactionsOwnContextWritesEvenWhenTheEventIsItsFirstStatement() {
    pooled.transaction(
        configuration -> {
          outbox().append(DSL.using(configuration), placed("o-3"));
          DSL.using(configuration).execute("INSERT INTO orders VALUES ('o-3')");
        });
    assertThatThrownBy(
            () ->
                pooled.transaction(
                    configuration -> {
                      outbox().append(DSL.using(configuration), placed("o-4"));
                      throw new IllegalStateException("payment refused");
                    }))
        .isInstanceOf(IllegalStateException.class);

    assertThat(db.queryString("SELECT string_agg(aggregate_id, ',') FROM outbox_events"))
        .isEqualTo("o-3");
    assertThat(db.queryLong("SELECT count(*) FROM orders")).isEqualTo(1);
  }

  @Test
  void aThreadLocalTransactionsOuterContextIsTheTransactionAndWrites() {
    DSLContext threadBound =
        DSL.using(
            new DefaultConfiguration()
                .set(SQLDialect.POSTGRES)
                .set(
                    new ThreadLocalTransactionProvider(
                        new DataSourceConnectionProvider(manualCommitPool), true)));
    // jOOQ's thread-local transactions hand the same connection to the outer context.
    threadBound.transaction(
        () -> {
          threadBound.execute("INSERT INTO orders VALUES ('o-5')");
          outbox().append(threadBound, placed("o-5"));
        });

    assertThat(db.queryString("SELECT string_agg(aggregate_id, ',') FROM outbox_events"))
        .isEqualTo("o-5");
    assertThat(db.queryLong("SELECT count(*) FROM orders")).isEqualTo(1);
  }

  @Test
  void theInboxRefusesThePooledContextAndTheHandlerDoesNotRun() {
    UUID eventId = UUID.randomUUID();
    boolean[] ran = {false};

    assertThatThrownBy(
            () ->
                pooled.transaction(
                    configuration ->
                        inbox.handleOnce(
                            pooled,
                            "billing",
                            eventId,
                            () -> {
                              ran[0] = true;
                              DSL.using(configuration)
                                  .execute("INSERT INTO orders VALUES ('billed')");
                            })))
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("hands out another connection for each statement");

    assertThat(ran[0]).isFalse();
    assertThat(db.queryLong("SELECT count(*) FROM processed_events")).isZero();
    assertThat(db.queryLong("SELECT count(*) FROM orders")).isZero();
  }
}

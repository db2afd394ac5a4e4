package dev.pgoutbox.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgoutbox.db.jooq.tables.records.OutboxEventsRecord;
import dev.pgoutbox.testing.TestSchema;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.jooq.DSLContext;
import org.jooq.ExecuteContext;
import org.jooq.ExecuteListener;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Events commit with the host's business rows, or not at all; the outbox never ends the tx. */
class OutboxAtomicityIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static DSLContext host;
  private static Outbox outbox;

  @BeforeAll
  static void createBusinessTable() {
    db.execute("CREATE TABLE orders (id bigint PRIMARY KEY, status text NOT NULL)");
    // The host's own jOOQ context: no schema mapping of its own, pgoutbox adds it.
    host = DSL.using(db.dataSource(), SQLDialect.POSTGRES);
    outbox = Outbox.builder().schema(db.schema()).build();
  }

  @BeforeEach
  void empty() {
    db.execute("TRUNCATE orders, outbox_events");
  }

  private static OutboxEvent created(long orderId) {
    return OutboxEvent.of(
        "order", Long.toString(orderId), "order.created", Map.of("id", orderId, "total", 12));
  }

  @Test
  void committedJooqTransactionKeepsBusinessRowAndEvent() {
    UUID id =
        host.transactionResult(
            tx -> {
              tx.dsl().execute("INSERT INTO orders VALUES (1, 'new')");
              return outbox.append(tx.dsl(), created(1));
            });

    assertThat(Stored.count(db, "orders")).isEqualTo(1);
    List<OutboxEventsRecord> events = Stored.events(db);
    assertThat(events).hasSize(1);
    OutboxEventsRecord event = events.get(0);
    assertThat(event.getId()).isEqualTo(id);
    assertThat(event.getAggregateType()).isEqualTo("order");
    assertThat(event.getAggregateId()).isEqualTo("1");
    assertThat(event.getEventType()).isEqualTo("order.created");
    assertThat(event.getPayload().data()).isEqualTo("{\"id\": 1, \"total\": 12}");
    assertThat(event.getHeaders().data()).isEqualTo("{}");
    assertThat(event.getAttempts()).isZero();
    assertThat(event.getProcessedAt()).isNull();
  }

  @Test
  void rolledBackJdbcTransactionLeavesNeitherBusinessRowNorEvent() throws SQLException {
    try (Connection connection = db.dataSource().getConnection()) {
      connection.setAutoCommit(false);
      insertOrder(connection, 2);
      outbox.append(connection, created(2));
      connection.rollback();
    }
    assertThat(Stored.count(db, "orders")).isZero();
    assertThat(Stored.eventCount(db)).isZero();
  }

  @Test
  void committedJdbcTransactionKeepsBusinessRowAndEvent() throws SQLException {
    UUID id;
    try (Connection connection = db.dataSource().getConnection()) {
      connection.setAutoCommit(false);
      insertOrder(connection, 3);
      id = outbox.append(connection, created(3));
      connection.commit();
    }
    assertThat(Stored.count(db, "orders")).isEqualTo(1);
    assertThat(Stored.events(db)).extracting(OutboxEventsRecord::getId).containsExactly(id);
  }

  @Test
  void exceptionBetweenAppendAndCommitLeavesNothing() {
    IllegalStateException failure = new IllegalStateException("payment service down");
    assertThatThrownBy(
            () ->
                host.transaction(
                    tx -> {
                      tx.dsl().execute("INSERT INTO orders VALUES (4, 'new')");
                      outbox.append(tx.dsl(), created(4));
                      throw failure;
                    }))
        .isSameAs(failure);

    assertThat(Stored.count(db, "orders")).isZero();
    assertThat(Stored.eventCount(db)).isZero();
  }

  @Test
  void appendNeitherCommitsNorEndsTheHostTransaction() throws SQLException {
    try (Connection connection = db.dataSource().getConnection();
        Connection observer = db.connect()) {
      connection.setAutoCommit(false);
      long before = transactionId(connection);
      outbox.append(connection, created(5));
      outbox.appendAll(connection, List.of(created(6), created(7)));

      assertThat(connection.getAutoCommit()).isFalse();
      assertThat(transactionId(connection)).isEqualTo(before);
      assertThat(countEvents(connection)).isEqualTo(3); // visible inside the transaction
      assertThat(countEvents(observer)).isZero(); // and nowhere else: not committed
      connection.rollback();
    }
    assertThat(Stored.eventCount(db)).isZero();
  }

  @Test
  void autoCommitConnectionIsRefusedBeforeAnythingIsWritten() throws SQLException {
    try (Connection connection = db.dataSource().getConnection()) {
      connection.setAutoCommit(true);
      assertThatThrownBy(() -> outbox.append(connection, created(8)))
          .isInstanceOf(OutboxException.class)
          .hasMessageContaining("auto-commit mode")
          .hasMessageContaining("nothing was written");
    }
    // A jOOQ context on a DataSource, outside a transaction, autocommits every statement.
    assertThatThrownBy(() -> outbox.append(host, created(9)))
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("auto-commit mode");
    assertThat(Stored.eventCount(db)).isZero();
  }

  /**
   * Auto-commit on with a transaction open on the server (a host's own {@code BEGIN}; pgjdbc's XA
   * branches look the same, see {@code TwoPhaseCommitIT}): the event joins that transaction and
   * goes wherever it goes.
   */
  @Test
  void anAutoCommitConnectionInsideAnExplicitBeginJoinsThatTransaction() throws SQLException {
    try (Connection connection = db.dataSource().getConnection();
        Statement statement = connection.createStatement()) {
      connection.setAutoCommit(true);
      statement.execute("BEGIN");
      insertOrder(connection, 11);
      outbox.append(connection, created(11));
      statement.execute("ROLLBACK");
      assertThat(Stored.eventCount(db)).as("rolled back with the order").isZero();

      statement.execute("BEGIN");
      insertOrder(connection, 12);
      outbox.append(connection, created(12));
      statement.execute("COMMIT");
    }
    assertThat(Stored.eventCount(db)).as("committed with the order").isOne();
  }

  @Test
  void appendRunsThroughTheHostsOwnJooqConfiguration() {
    List<String> statements = new CopyOnWriteArrayList<>();
    ExecuteListener recorder =
        new ExecuteListener() {
          @Override
          public void executeStart(ExecuteContext ctx) {
            statements.add(ctx.sql());
          }
        };
    DSLContext listened = host.configuration().derive(recorder).dsl();

    listened.transaction(tx -> outbox.append(tx.dsl(), created(10)));

    assertThat(statements)
        .singleElement()
        .asString()
        .startsWith("insert into \"" + db.schema() + "\".\"outbox_events\"");
    assertThat(Stored.eventCount(db)).isEqualTo(1);
  }

  private static void insertOrder(Connection connection, long id) throws SQLException {
    try (PreparedStatement insert =
        connection.prepareStatement("INSERT INTO orders VALUES (?, 'new')")) {
      insert.setLong(1, id);
      insert.executeUpdate();
    }
  }

  private static long transactionId(Connection connection) throws SQLException {
    return queryLong(connection, "SELECT txid_current()");
  }

  private static long countEvents(Connection connection) throws SQLException {
    return queryLong(connection, "SELECT count(*) FROM " + db.schema() + ".outbox_events");
  }

  private static long queryLong(Connection connection, String sql) throws SQLException {
    try (PreparedStatement statement = connection.prepareStatement(sql);
        ResultSet rs = statement.executeQuery()) {
      rs.next();
      return rs.getLong(1);
    }
  }
}

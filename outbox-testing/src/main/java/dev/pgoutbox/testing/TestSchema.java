package dev.pgoutbox.testing;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.db.OutboxSchema;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A JUnit 5 extension that gives a test class a schema of its own on a real PostgreSQL ({@link
 * TestDatabase}), migrated with the pgoutbox migrations ({@code OutboxSchema.migrate}) unless
 * {@link #empty()}, with a connection pool on it, and drops it after the class. Test classes can
 * therefore run in any order, and at the same time, against one database.
 *
 * <pre>{@code
 * class OrderOutboxIT {
 *   @RegisterExtension static final TestSchema db = TestSchema.migrated();
 *
 *   @Test
 *   void appendsAnEvent() {
 *     Outbox outbox = Outbox.builder().schema(db.schema()).build();
 *     db.dsl().transaction(tx -> outbox.append(tx.dsl(), event));
 *     assertThat(db.queryLong("select count(*) from outbox_events")).isEqualTo(1);
 *   }
 * }
 * }</pre>
 *
 * <p>Register it as a {@code static} field: the schema lives for the class. Its methods are
 * thread-safe once the class's tests run.
 */
public final class TestSchema implements BeforeAllCallback, AfterAllCallback {

  private final boolean migrate;
  private final int poolSize;
  private final java.util.function.Supplier<TestServer> server;
  private String schema = "";
  private HikariDataSource dataSource;

  private TestSchema(boolean migrate, int poolSize) {
    this(migrate, poolSize, TestDatabase::get);
  }

  private TestSchema(
      boolean migrate, int poolSize, java.util.function.Supplier<TestServer> server) {
    this.migrate = migrate;
    this.poolSize = poolSize;
    this.server = server;
  }

  /**
   * A migrated schema, pool of {@code poolSize}, on the {@link LogicalDecodingDatabase} (a server
   * with {@code wal_level=logical}, for the WAL relay) rather than {@link TestDatabase}.
   */
  public static TestSchema migratedWithLogicalDecoding(int poolSize) {
    return new TestSchema(true, poolSize, LogicalDecodingDatabase::get);
  }

  /**
   * A migrated schema, pool of {@code poolSize}, on the server {@code server} gives when the class
   * starts: one the test class runs itself, with settings of its own (a small {@code
   * max_slot_wal_keep_size}, a standby). Register that server's extension before this one, so that
   * it stops after this schema is dropped.
   */
  public static TestSchema migratedOn(
      java.util.function.Supplier<? extends TestServer> server, int poolSize) {
    return new TestSchema(true, poolSize, server::get);
  }

  /** A schema with the pgoutbox tables in it, and a pool of 10 connections. */
  public static TestSchema migrated() {
    return new TestSchema(true, 10);
  }

  /** A schema with the pgoutbox tables in it, and a pool of {@code poolSize} connections. */
  public static TestSchema migrated(int poolSize) {
    return new TestSchema(true, poolSize);
  }

  /** An empty schema, for tests that run the migrations themselves. */
  public static TestSchema empty() {
    return new TestSchema(false, 10);
  }

  @Override
  public void beforeAll(ExtensionContext context) throws Exception {
    String className = context.getRequiredTestClass().getSimpleName().toLowerCase(Locale.ROOT);
    String base = className.length() > 40 ? className.substring(0, 40) : className;
    schema = "t_" + base + "_" + Integer.toHexString(ThreadLocalRandom.current().nextInt(1 << 24));
    try (Connection connection = server.get().connect();
        Statement statement = connection.createStatement()) {
      statement.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
      statement.execute("CREATE SCHEMA " + schema);
    }
    // All of the class's connections from the start: tests hold several at once on purpose, and a
    // pool growing on demand once left a borrower waiting out its 30 s timeout with 8 of 10 open,
    // all held (InboxIT in CI).
    dataSource = newPool(poolSize, true, "test-" + schema, poolSize);
    if (migrate) {
      OutboxSchema.migrate(dataSource, schema);
    }
  }

  @Override
  public void afterAll(ExtensionContext context) throws Exception {
    if (dataSource != null) {
      dataSource.close();
    }
    try (Connection connection = server.get().connect();
        Statement statement = connection.createStatement()) {
      statement.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    }
  }

  /** Name of this class's schema. */
  public String schema() {
    return schema;
  }

  /** A pool whose connections have this schema first on their {@code search_path}. */
  public DataSource dataSource() {
    return dataSource;
  }

  /** JDBC URL of the database, with {@code currentSchema} set to this schema. */
  public String jdbcUrl() {
    String url = server.get().jdbcUrl();
    return url + (url.contains("?") ? "&" : "?") + "currentSchema=" + schema;
  }

  /** A new pool of {@code size} connections on this schema; the caller closes it. */
  public HikariDataSource newPool(int size) {
    return newPool(size, true, "test-" + schema, 0);
  }

  /**
   * A new pool whose connections come with auto-commit off, as a host configures it for JPA ({@code
   * spring.datasource.hikari.auto-commit=false}): what is not committed is rolled back when a
   * connection goes back. The caller closes it.
   */
  public HikariDataSource newManualCommitPool(int size, String name) {
    return newPool(size, false, name, 0);
  }

  private HikariDataSource newPool(int size, boolean autoCommit, String name, int minimumIdle) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(jdbcUrl());
    config.setAutoCommit(autoCommit);
    config.setMaximumPoolSize(size);
    config.setMinimumIdle(minimumIdle);
    config.setPoolName(name);
    return new HikariDataSource(config);
  }

  /** A new unpooled connection on this schema; the caller closes it. */
  public Connection connect() throws SQLException {
    Connection connection = server.get().connect();
    try (Statement statement = connection.createStatement()) {
      statement.execute("SET search_path TO " + schema);
    }
    return connection;
  }

  /** jOOQ on the pool, rendering the generated tables into this schema. */
  public DSLContext dsl() {
    return DSL.using(dataSource, SQLDialect.POSTGRES, OutboxSchema.jooqSettings(schema));
  }

  /** The first column of the first row of {@code sql}, as a long (counts, sums). */
  public long queryLong(String sql) {
    try (Connection connection = dataSource.getConnection();
        Statement statement = connection.createStatement();
        var result = statement.executeQuery(sql)) {
      if (!result.next()) {
        throw new IllegalStateException("no row: " + sql);
      }
      return result.getLong(1);
    } catch (SQLException e) {
      throw new IllegalStateException(sql + ": " + e.getMessage(), e);
    }
  }

  /**
   * How many sessions matching {@code condition} (on {@code pg_stat_activity}, e.g. {@code
   * "application_name = 'x'"}) have started listening: their last statement was the {@code LISTEN}
   * or, after a wake-up, the relay's check for committing writers.
   */
  public long listeningSessions(String condition) {
    return queryLong(
        "select count(*) from pg_stat_activity where ("
            + condition
            + ") and (query like 'LISTEN%' or query like '%pg_try_advisory_lock(pg_catalog.hashtext%')");
  }

  /** The first column of the first row of {@code sql}, as text (null when SQL NULL). */
  public @Nullable String queryString(String sql) {
    try (Connection connection = dataSource.getConnection();
        Statement statement = connection.createStatement();
        var result = statement.executeQuery(sql)) {
      if (!result.next()) {
        throw new IllegalStateException("no row: " + sql);
      }
      return result.getString(1);
    } catch (SQLException e) {
      throw new IllegalStateException(sql + ": " + e.getMessage(), e);
    }
  }

  /** The backend process id of {@code connection}, to find it in {@code pg_locks}. */
  public static int backendPid(Connection connection) throws SQLException {
    try (Statement statement = connection.createStatement();
        var result = statement.executeQuery("SELECT pg_backend_pid()")) {
      result.next();
      return result.getInt(1);
    }
  }

  /**
   * Waits (up to {@link Eventually#DEADLINE}) until backend {@code pid} waits for a lock of {@code
   * lockType} ({@code advisory}, {@code tuple}, {@code transactionid}...): the latch of tests that
   * race two transactions.
   */
  public void awaitWaitingForLock(int pid, String lockType) {
    awaitLockWait("backend " + pid, "pid = " + pid, lockType);
  }

  /**
   * {@link #awaitWaitingForLock} for whichever backend waits: for a statement whose session the
   * test does not know (e.g. one run on a pooled connection by the code under test).
   */
  public void awaitAnyWaitingForLock(String lockType) {
    awaitLockWait("a backend", "true", lockType);
  }

  private void awaitLockWait(String who, String backend, String lockType) {
    Eventually.await(
        who + " waits for a " + lockType + " lock",
        () ->
            queryLong(
                    "SELECT count(*) FROM pg_locks WHERE "
                        + backend
                        + " AND locktype = '"
                        + lockType.replace("'", "''")
                        + "' AND NOT granted")
                > 0);
  }

  /** Runs {@code sql} on a pooled connection, for test set-up. */
  public void execute(String sql) {
    try (Connection connection = dataSource.getConnection();
        Statement statement = connection.createStatement()) {
      statement.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException(sql + ": " + e.getMessage(), e);
    }
  }

  /**
   * Drops the replication slot {@code slot} when it exists; false while a WAL sender still streams
   * it (a stopped reader's sender ends shortly after), so tests call it until it answers true.
   */
  public boolean dropReplicationSlot(String slot) {
    try (Connection connection = dataSource.getConnection();
        PreparedStatement drop =
            connection.prepareStatement(
                "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots"
                    + " WHERE slot_name = ?")) {
      drop.setString(1, slot);
      drop.execute();
      return true;
    } catch (SQLException e) {
      return false;
    }
  }
}

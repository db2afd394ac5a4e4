package dev.pgoutbox.core.internal;

import dev.pgoutbox.db.OutboxSchema;
import java.sql.Connection;
import java.sql.SQLException;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.conf.Settings;
import org.jooq.exception.DataAccessException;
import org.jooq.impl.DSL;
import org.postgresql.PGConnection;
import org.postgresql.core.BaseConnection;
import org.postgresql.core.TransactionState;

/** jOOQ contexts on the host's transaction, rendering pgoutbox's tables into their schema. */
public final class Contexts {

  private Contexts() {}

  /**
   * A context that uses the host's configuration as it is (connection, transaction, listeners),
   * with the generated tables mapped onto {@code schema} and always qualified with it.
   */
  public static DSLContext derive(DSLContext host, String schema) {
    Settings settings = OutboxSchema.mapSchema(host.settings(), schema).withRenderSchema(true);
    if (host.dialect().family() == SQLDialect.POSTGRES) {
      return host.configuration().derive(settings).dsl();
    }
    return host.configuration().derive(settings).derive(SQLDialect.POSTGRES).dsl();
  }

  /** Settings for contexts made on a bare JDBC connection or data source. */
  public static Settings settings(String schema) {
    return OutboxSchema.jooqSettings(schema).withRenderSchema(true);
  }

  /** A context on the host's JDBC connection, which pgoutbox neither commits nor closes. */
  public static DSLContext on(Connection connection, Settings settings) {
    return DSL.using(connection, SQLDialect.POSTGRES, settings);
  }

  /** Whether writes through a context join one transaction of the host's. */
  public enum TransactionCheck {
    /** One connection, out of auto-commit mode: the writes commit with the host's. */
    IN_TRANSACTION,
    /** The connection is in auto-commit mode: each write would commit on its own. */
    AUTO_COMMIT,
    /**
     * The context hands out another connection for each statement (a {@code DSLContext} on a
     * connection pool rather than on the transaction, e.g. the outer context inside a jOOQ {@code
     * transaction(...)} lambda): each write would run on a connection of its own, which commits
     * apart from the host's writes, or, in a manual-commit pool, is rolled back when released.
     */
    CONNECTION_PER_STATEMENT;

    /** What the refusal says after "needs the host's transaction, but". */
    public String reason() {
      return switch (this) {
        case IN_TRANSACTION -> "it is in one";
        case AUTO_COMMIT -> "the connection is in auto-commit mode";
        case CONNECTION_PER_STATEMENT ->
            "the DSLContext hands out another connection for each statement (a context on a"
                + " connection pool, not on the transaction: inside jOOQ's transaction(...) pass"
                + " DSL.using(configuration) of the lambda, not the outer context)";
      };
    }
  }

  /**
   * Whether writes through {@code tx} join one transaction of the host's: its connection is out of
   * auto-commit mode, and a second connection taken while the first is held is the same one (so
   * every statement runs on it). A pool hands out another; a context on a connection, a jOOQ
   * transaction's context and Spring's transaction-aware data source hand out the same.
   *
   * @throws DataAccessException if the connection cannot tell
   */
  public static TransactionCheck check(DSLContext tx) {
    return tx.connectionResult(
        first -> {
          if (autoCommit(first)) {
            return TransactionCheck.AUTO_COMMIT;
          }
          return tx.connectionResult(
              second ->
                  sameConnection(first, second)
                      ? TransactionCheck.IN_TRANSACTION
                      : TransactionCheck.CONNECTION_PER_STATEMENT);
        });
  }

  /**
   * Whether two connections handed out by one context are the same PostgreSQL session, through
   * whatever wraps them (pools, transaction-aware proxies). A wrapper that cannot unwrap counts as
   * the same: an unknown wrapper must not refuse a host's transaction.
   */
  private static boolean sameConnection(Connection first, Connection second) {
    if (first == second) {
      return true;
    }
    try {
      return first.unwrap(PGConnection.class) == second.unwrap(PGConnection.class);
    } catch (SQLException e) {
      return true;
    }
  }

  /**
   * Whether each statement on {@code connection} would commit on its own: auto-commit mode with no
   * transaction open on the server. pgjdbc's XA connections (42.7.13 and later) keep auto-commit on
   * while their branch's transaction is open ({@code XAResource.start} sends {@code BEGIN}), as
   * does a host that sent {@code BEGIN} itself; the driver's transaction state tells them apart. A
   * connection that cannot unwrap to pgjdbc's counts as in auto-commit mode, as its flag says.
   */
  private static boolean autoCommit(Connection connection) throws SQLException {
    if (!connection.getAutoCommit()) {
      return false;
    }
    if (!connection.isWrapperFor(BaseConnection.class)) {
      return true;
    }
    return connection.unwrap(BaseConnection.class).getTransactionState() == TransactionState.IDLE;
  }
}

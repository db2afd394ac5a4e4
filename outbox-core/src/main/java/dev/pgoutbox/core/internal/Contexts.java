package dev.pgoutbox.core.internal;

import dev.pgoutbox.db.OutboxSchema;
import java.sql.Connection;
import java.sql.SQLException;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.conf.Settings;
import org.jooq.exception.DataAccessException;
import org.jooq.impl.DSL;

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

  /**
   * Whether {@code tx}'s connection is in a transaction, i.e. not in auto-commit mode: a write made
   * in auto-commit mode would commit on its own, apart from the host's other writes.
   *
   * @throws DataAccessException if the connection cannot tell
   */
  public static boolean inTransaction(DSLContext tx) {
    return tx.connectionResult(connection -> !autoCommit(connection));
  }

  /** Like {@link #inTransaction(DSLContext)} for a JDBC connection. */
  public static boolean inTransaction(Connection connection) {
    try {
      return !autoCommit(connection);
    } catch (SQLException e) {
      throw new DataAccessException("Could not read the connection's auto-commit mode", e);
    }
  }

  private static boolean autoCommit(Connection connection) throws SQLException {
    return connection.getAutoCommit();
  }
}

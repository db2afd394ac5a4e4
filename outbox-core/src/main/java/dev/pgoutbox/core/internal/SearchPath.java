package dev.pgoutbox.core.internal;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/**
 * The fixed {@code search_path} under which pgoutbox runs its statements in sessions it owns (relay
 * batches, the WAL relay, the fleet registry, {@code OutboxAdmin}, the purges): {@code pg_catalog,
 * pg_temp}.
 *
 * <p>PostgreSQL resolves a function or operator call against every schema on the path and prefers
 * an overload whose argument types match exactly over pg_catalog's own, wherever it sits on the
 * path: an {@code =(varchar, varchar)} or {@code hashtext(varchar)} planted in a schema the session
 * can see ran in the relay's claim. With this path only pg_catalog is searched for functions,
 * operators and types (pg_temp is last, and never searched for functions or operators), so nothing
 * another role creates can run in these sessions. The setting that fixes the path is itself called
 * as {@code pg_catalog.set_config}. Tables are always named with their schema.
 */
public final class SearchPath {

  /** The path: nothing but the catalog, and temporary tables after it. */
  public static final String FIXED = "pg_catalog, pg_temp";

  /**
   * A select-list item that fixes the path until the transaction ends, to be sent with a
   * transaction's first statement (no extra round trip).
   */
  public static final String FIX_FOR_TRANSACTION =
      "pg_catalog.set_config('search_path', '" + FIXED + "', true)";

  /** Fixes the path for the rest of the session, answering the path it replaced. */
  static final String FIX_FOR_SESSION =
      "SELECT pg_catalog.current_setting('search_path'),"
          + " pg_catalog.set_config('search_path', '"
          + FIXED
          + "', false)";

  /** Puts back the path a session had before {@link #FIX_FOR_SESSION}. */
  static final String RESTORE = "SELECT pg_catalog.set_config('search_path', ?, false)";

  private SearchPath() {}

  /** Fixes the path on {@code connection} until its current transaction ends. */
  public static void fixForTransaction(Connection connection) throws SQLException {
    try (Statement statement = connection.createStatement()) {
      statement.execute("SELECT " + FIX_FOR_TRANSACTION);
    }
  }

  /**
   * A data source whose connections run with the fixed path from the moment they are handed out
   * until they are closed, when the session's own path is put back (the host's pool hands the
   * connection to others afterwards). Costs two round trips per connection, so it serves the
   * occasional statements (admin, registry, slot checks); the relay's batches fix the path in their
   * first statement instead.
   */
  public static DataSource pinned(DataSource dataSource) {
    if (Proxy.isProxyClass(dataSource.getClass())
        && Proxy.getInvocationHandler(dataSource) instanceof PinnedDataSource) {
      return dataSource;
    }
    return (DataSource)
        Proxy.newProxyInstance(
            SearchPath.class.getClassLoader(),
            new Class<?>[] {DataSource.class},
            new PinnedDataSource(dataSource));
  }

  private record PinnedDataSource(DataSource target) implements InvocationHandler {
    @Override
    public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
      if (method.getName().equals("getConnection")) {
        Connection connection = (Connection) call(target, method, args);
        try {
          return pin(connection);
        } catch (SQLException | RuntimeException e) {
          connection.close();
          throw e;
        }
      }
      if (method.getName().equals("toString") && method.getParameterCount() == 0) {
        return target.toString();
      }
      return call(target, method, args);
    }
  }

  private static Connection pin(Connection connection) throws SQLException {
    String previous;
    try (Statement statement = connection.createStatement();
        ResultSet result = statement.executeQuery(FIX_FOR_SESSION)) {
      result.next();
      previous = result.getString(1);
    }
    return (Connection)
        Proxy.newProxyInstance(
            SearchPath.class.getClassLoader(),
            new Class<?>[] {Connection.class},
            new PinnedConnection(connection, previous));
  }

  private record PinnedConnection(Connection target, String previous) implements InvocationHandler {
    @Override
    public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
      switch (method.getName()) {
        case "close" -> {
          try {
            restore();
          } finally {
            target.close();
          }
          return null;
        }
        case "unwrap" -> {
          Class<?> type = (Class<?>) args[0];
          return type.isInstance(proxy) ? proxy : target.unwrap(type);
        }
        case "isWrapperFor" -> {
          Class<?> type = (Class<?>) args[0];
          return type.isInstance(proxy) || target.isWrapperFor(type);
        }
        default -> {
          return call(target, method, args);
        }
      }
    }

    private void restore() {
      try {
        if (target.isClosed()) {
          return;
        }
        if (!target.getAutoCommit()) {
          // A transaction left open is the pool's to roll back; a failed one refuses statements.
          target.rollback();
        }
        try (PreparedStatement statement = target.prepareStatement(RESTORE)) {
          statement.setString(1, previous);
          statement.execute();
        }
      } catch (SQLException e) {
        // A broken connection: the pool discards it, and with it the session's path.
      }
    }
  }

  private static Object call(Object target, Method method, Object[] args) throws Throwable {
    try {
      return method.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }
}

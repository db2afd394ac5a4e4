package dev.pgoutbox.example.orders;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/** One-value SQL look-ups for assertions. */
final class Db {

  private Db() {}

  static long queryLong(DataSource dataSource, String sql) {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      if (!rs.next()) {
        throw new AssertionError("no row: " + sql);
      }
      return rs.getLong(1);
    } catch (SQLException e) {
      throw new AssertionError(sql + ": " + e.getMessage(), e);
    }
  }

  static void execute(DataSource dataSource, String sql) {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    } catch (SQLException e) {
      throw new AssertionError(sql + ": " + e.getMessage(), e);
    }
  }

  /** Orders whose last event shipping has not applied (lost or not yet consumed). */
  static long ordersNotCaughtUp(DataSource dataSource, String schema) {
    return queryLong(
        dataSource,
        "SELECT count(*) FROM "
            + schema
            + ".orders o LEFT JOIN "
            + schema
            + ".shipping_progress p ON p.order_id = o.id"
            + " WHERE p.last_version IS DISTINCT FROM o.version");
  }
}

package dev.pgoutbox.tools.chaos;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import javax.sql.DataSource;

/**
 * What a failed chaos run prints so that its cause shows in a CI log, where the run's directory
 * (relay logs, PostgreSQL data) is gone: each relay's last state lines, then the database's view of
 * the outbox rows by state, the replication slots, the sessions and the locks.
 */
final class FailureState {

  static final int LOG_LINES = 40;

  private FailureState() {}

  /** The queries, for the outbox in {@code schema}. */
  static List<String> queries(String schema) {
    return List.of(
        "select count(*) filter (where processed_at is null and dead_at is null) as pending,"
            + " count(*) filter (where processed_at is null and dead_at is null and parked)"
            + " as parked, count(*) filter (where processed_at is null and attempts > 0)"
            + " as failing, min(position) filter (where processed_at is null and dead_at is"
            + " null) as first_pending from "
            + schema
            + ".outbox_events",
        "select slot_name, active, active_pid, confirmed_flush_lsn, pg_current_wal_lsn(),"
            + " wal_status from pg_replication_slots",
        "select pid, application_name, backend_type, state, wait_event_type, wait_event,"
            + " now() - xact_start as in_transaction, left(query, 80) from pg_stat_activity"
            + " where datname = current_database() and pid <> pg_backend_pid()",
        "select l.pid, l.locktype, l.mode, l.granted, l.objid from pg_locks l"
            + " where l.locktype in ('advisory', 'transactionid') or not l.granted");
  }

  /** Prints the relays' log tails and each query's rows; a query that fails prints why. */
  static void print(PrintWriter log, DataSource dataSource, RelayFleet fleet, String schema) {
    fleet.logTails(LOG_LINES).forEach(log::println);
    for (String query : queries(schema)) {
      log.println("--- " + query);
      try (Connection connection = dataSource.getConnection();
          Statement statement = connection.createStatement();
          ResultSet rs = statement.executeQuery(query)) {
        int columns = rs.getMetaData().getColumnCount();
        while (rs.next()) {
          StringBuilder row = new StringBuilder();
          for (int c = 1; c <= columns; c++) {
            row.append(c == 1 ? "" : " | ").append(rs.getString(c));
          }
          log.println(row);
        }
      } catch (SQLException e) {
        log.println("(could not read: " + e.getMessage() + ")");
      }
    }
    log.flush();
  }
}

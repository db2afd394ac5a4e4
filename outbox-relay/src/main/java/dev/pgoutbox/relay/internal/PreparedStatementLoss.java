package dev.pgoutbox.relay.internal;

import java.sql.SQLException;
import org.jspecify.annotations.Nullable;

/**
 * Recognises a connection whose server-side prepared statements went missing or collided between
 * transactions: what pgjdbc meets behind a pooler in transaction mode (PgBouncer before 1.21, or
 * without {@code max_prepared_statements}), where each transaction may run on another server
 * session. pgjdbc names a statement it has run five times ({@code prepareThreshold}) and then
 * expects it on the same session; the pooler's other sessions do not have it, or have another
 * client's statement of that name.
 */
final class PreparedStatementLoss {

  /** {@code invalid_sql_statement_name}: "prepared statement ... does not exist". */
  private static final String DOES_NOT_EXIST = "26000";

  /** {@code duplicate_prepared_statement}: "prepared statement ... already exists". */
  private static final String ALREADY_EXISTS = "42P05";

  private PreparedStatementLoss() {}

  /**
   * What to do about {@code error}, if it (or a cause) is a lost or colliding prepared statement;
   * null otherwise.
   */
  static @Nullable String advice(Throwable error) {
    for (Throwable cause = error; cause != null; cause = cause.getCause()) {
      if (cause instanceof SQLException sql
          && (DOES_NOT_EXIST.equals(sql.getSQLState())
              || ALREADY_EXISTS.equals(sql.getSQLState()))) {
        return "a server-side prepared statement of this connection is missing or another's ("
            + sql.getMessage()
            + "): the connection goes through a pooler in transaction mode, such as PgBouncer"
            + " before 1.21, which runs each transaction on any server session. Add"
            + " prepareThreshold=0 to the JDBC URL (pgjdbc then names no statements), or give"
            + " PgBouncer 1.21+ max_prepared_statements; see docs/operations.md";
      }
    }
    return null;
  }
}

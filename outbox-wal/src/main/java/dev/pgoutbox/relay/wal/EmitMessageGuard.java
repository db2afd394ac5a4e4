package dev.pgoutbox.relay.wal;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * What the message transport's relay checks before it starts: a server that streams logical
 * decoding messages (PostgreSQL 14 and later), and no {@code EXECUTE} on {@code
 * pg_logical_emit_message} for {@code PUBLIC}. PostgreSQL grants it to {@code PUBLIC} by default
 * (its {@code proacl} is null): any role could then forge an event into the relay's stream, which
 * it would publish as the writer's.
 */
final class EmitMessageGuard {

  /** Every overload of the function, and whether PUBLIC may execute it. */
  static final String PUBLIC_EXECUTE =
      "SELECT p.oid::pg_catalog.regprocedure::pg_catalog.text,"
          + " p.proacl IS NULL OR EXISTS (SELECT 1 FROM pg_catalog.aclexplode(p.proacl) a"
          + " WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE')"
          + " FROM pg_catalog.pg_proc p"
          + " WHERE p.proname = 'pg_logical_emit_message'"
          + " AND p.pronamespace = 'pg_catalog'::pg_catalog.regnamespace"
          + " ORDER BY 1";

  private EmitMessageGuard() {}

  /** Why the relay must not start with the message transport on {@code dataSource}, or null. */
  public static @Nullable String problem(DataSource dataSource) throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      int version;
      try (ResultSet rs =
          s.executeQuery("SELECT pg_catalog.current_setting('server_version_num')")) {
        rs.next();
        version = Integer.parseInt(rs.getString(1));
      }
      if (version < 140000) {
        return "the message transport needs PostgreSQL 14 or later (pgoutput's messages option),"
            + " the server is "
            + version;
      }
      List<String> publicOnes = new ArrayList<>();
      List<String> all = new ArrayList<>();
      try (ResultSet rs = s.executeQuery(PUBLIC_EXECUTE)) {
        while (rs.next()) {
          all.add(rs.getString(1));
          if (rs.getBoolean(2)) {
            publicOnes.add(rs.getString(1));
          }
        }
      }
      if (publicOnes.isEmpty()) {
        return null;
      }
      StringBuilder fix = new StringBuilder();
      for (String function : all) {
        fix.append(" REVOKE EXECUTE ON FUNCTION pg_catalog.")
            .append(function)
            .append(" FROM PUBLIC; GRANT EXECUTE ON FUNCTION pg_catalog.")
            .append(function)
            .append(" TO <writer role>;");
      }
      return "PUBLIC may execute "
          + String.join(", ", publicOnes.stream().map(f -> "pg_catalog." + f).toList())
          + ", so any role could forge an event into the stream this relay publishes. As a"
          + " superuser, run:"
          + fix
          + " (or OutboxRoles.grantWalMessages, db/pgoutbox/roles/wal-messages-grants.sql;"
          + " docs/wal-messages.md)";
    }
  }
}

package dev.pgoutbox.db;

import static java.util.Objects.requireNonNull;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * Grants the least privileges pgoutbox needs to three roles the host has created: a writer (the
 * application's role: {@code INSERT} on {@code outbox_events} and nothing else), a relay ({@code
 * SELECT, UPDATE, DELETE} on {@code outbox_events}, {@code SELECT} on {@code outbox_dead_letters},
 * {@code SELECT, INSERT, UPDATE, DELETE} on the relay registry {@code outbox_relays}) and a
 * consumer ({@code SELECT, INSERT, DELETE} on {@code processed_events}, and {@code UPDATE} of its
 * {@code processed_at} column, which the purge's {@code FOR UPDATE SKIP LOCKED} needs).
 *
 * <pre>{@code
 * OutboxSchema.migrate(ownerDataSource, "outbox");
 * OutboxRoles.grant(ownerDataSource, "outbox", "orders_app", "orders_relay", "orders_consumer");
 * }</pre>
 *
 * <p>The statements, with a line on why each privilege is needed, are in {@value #GRANTS_SCRIPT};
 * the same file runs with {@code psql -v schema=... -v writer_role=... -v relay_role=... -v
 * consumer_role=... -f grants.sql}. Every name must be a plain lower-case identifier (see {@link
 * OutboxSchema#requireValidName(String)}), so nothing the caller passes can change the statements.
 *
 * <p>All methods are static and thread-safe.
 */
public final class OutboxRoles {

  /** Classpath resource of the grants script, with psql variables for the names. */
  public static final String GRANTS_SCRIPT = "db/pgoutbox/roles/grants.sql";

  /**
   * Classpath resource of what the WAL relay's role needs on top of {@link #GRANTS_SCRIPT} ({@code
   * REPLICATION}, the publication), with psql variables for the names.
   */
  public static final String WAL_RELAY_GRANTS_SCRIPT = "db/pgoutbox/roles/wal-relay-grants.sql";

  /**
   * Classpath resource of what the message transport needs: {@code EXECUTE} on {@code
   * pg_logical_emit_message} taken from {@code PUBLIC} and given to the writer, and the relay's
   * {@code INSERT} to park failed events; psql variables for the names.
   */
  public static final String WAL_MESSAGES_GRANTS_SCRIPT =
      "db/pgoutbox/roles/wal-messages-grants.sql";

  private static final Pattern PLAIN_IDENTIFIER = Pattern.compile("[a-z_][a-z0-9_]*");

  private OutboxRoles() {}

  /**
   * The statements of {@value #GRANTS_SCRIPT} with the names filled in, one per element, without
   * comments or trailing semicolons.
   *
   * @throws IllegalArgumentException naming the first argument that is not a plain identifier
   */
  public static List<String> grantStatements(
      String schema, String writerRole, String relayRole, String consumerRole) {
    String script =
        readScript(GRANTS_SCRIPT)
            .replace(":\"schema\"", quoted("schema", schema))
            .replace(":\"writer_role\"", quoted("writerRole", writerRole))
            .replace(":\"relay_role\"", quoted("relayRole", relayRole))
            .replace(":\"consumer_role\"", quoted("consumerRole", consumerRole));
    return statements(GRANTS_SCRIPT, script);
  }

  /**
   * Runs {@link #grantStatements} in one transaction on a connection of {@code dataSource}, which
   * must own the schema (the role that ran {@link OutboxSchema#migrate}) or be a superuser. The
   * roles must exist. Idempotent.
   *
   * @throws IllegalArgumentException naming the first argument that is not a plain identifier
   * @throws IllegalStateException with PostgreSQL's reason if a statement fails (nothing granted)
   */
  public static void grant(
      DataSource dataSource,
      String schema,
      String writerRole,
      String relayRole,
      String consumerRole) {
    requireNonNull(dataSource, "dataSource");
    List<String> statements = grantStatements(schema, writerRole, relayRole, consumerRole);
    try (Connection connection = dataSource.getConnection()) {
      boolean autoCommit = connection.getAutoCommit();
      connection.setAutoCommit(false);
      try (Statement statement = connection.createStatement()) {
        for (String sql : statements) {
          statement.execute(sql);
        }
        connection.commit();
      } catch (SQLException e) {
        connection.rollback();
        throw e;
      } finally {
        connection.setAutoCommit(autoCommit);
      }
    } catch (SQLException e) {
      throw new IllegalStateException(
          "Could not grant the pgoutbox privileges on schema " + schema + ": " + e.getMessage(), e);
    }
  }

  /**
   * The functions that take an advisory lock (session or transaction level, waiting or trying,
   * exclusive or shared, one {@code bigint} key or two {@code integer} keys), as {@code pg_catalog}
   * signatures. Unlocking needs no restriction: a session can only release its own.
   */
  public static final List<String> ADVISORY_LOCK_FUNCTIONS = advisoryLockFunctions();

  private static List<String> advisoryLockFunctions() {
    List<String> functions = new ArrayList<>();
    for (String tryPrefix : List.of("", "try_")) {
      for (String level : List.of("", "xact_")) {
        for (String mode : List.of("", "_shared")) {
          for (String args : List.of("bigint", "integer, integer")) {
            functions.add(
                "pg_catalog.pg_"
                    + tryPrefix
                    + "advisory_"
                    + level
                    + "lock"
                    + mode
                    + "("
                    + args
                    + ")");
          }
        }
      }
    }
    return List.copyOf(functions);
  }

  /**
   * The statements of {@link #restrictAdvisoryLocks}: {@code REVOKE EXECUTE ... FROM PUBLIC} and
   * {@code GRANT EXECUTE ... TO} each role, for each of {@link #ADVISORY_LOCK_FUNCTIONS}.
   *
   * @throws IllegalArgumentException naming the first role that is not a plain identifier
   */
  public static List<String> restrictAdvisoryLockStatements(List<String> roles) {
    List<String> quotedRoles = new ArrayList<>();
    for (int i = 0; i < roles.size(); i++) {
      quotedRoles.add(quoted("roles[" + i + "]", roles.get(i)));
    }
    List<String> statements = new ArrayList<>();
    for (String function : ADVISORY_LOCK_FUNCTIONS) {
      statements.add("REVOKE EXECUTE ON FUNCTION " + function + " FROM PUBLIC");
      if (!quotedRoles.isEmpty()) {
        statements.add(
            "GRANT EXECUTE ON FUNCTION " + function + " TO " + String.join(", ", quotedRoles));
      }
    }
    return List.copyOf(statements);
  }

  /**
   * Takes the advisory lock functions away from every role of the current database but {@code
   * roles} (and superusers), so that no other role can hold a lock that pgoutbox's writers or
   * relays use (docs/security.md). Optional hardening, for the database of the outbox only
   * (function privileges are per database): grant it to the writer, relay and migration roles, and
   * to every other role of that database that takes advisory locks itself (Flyway does, to
   * serialize migrations; many job queues do). Run as a superuser. Idempotent; undone by {@code
   * GRANT EXECUTE ON FUNCTION ... TO PUBLIC} on the same functions.
   *
   * @throws IllegalArgumentException naming the first role that is not a plain identifier
   * @throws IllegalStateException with PostgreSQL's reason if a statement fails (nothing changed)
   */
  public static void restrictAdvisoryLocks(DataSource superuser, List<String> roles) {
    List<String> statements = restrictAdvisoryLockStatements(roles);
    try (Connection connection = superuser.getConnection()) {
      boolean autoCommit = connection.getAutoCommit();
      connection.setAutoCommit(false);
      try (Statement statement = connection.createStatement()) {
        for (String sql : statements) {
          statement.execute(sql);
        }
        connection.commit();
      } catch (SQLException e) {
        connection.rollback();
        throw e;
      } finally {
        connection.setAutoCommit(autoCommit);
      }
    } catch (SQLException e) {
      throw new IllegalStateException(
          "Could not restrict the advisory lock functions: " + e.getMessage(), e);
    }
  }

  private static String quoted(String field, String name) {
    if (name == null) {
      throw new IllegalArgumentException(field + " must not be null");
    }
    if (name.isEmpty() || name.length() > OutboxSchema.MAX_IDENTIFIER_LENGTH) {
      throw new IllegalArgumentException(
          field
              + " must be between 1 and "
              + OutboxSchema.MAX_IDENTIFIER_LENGTH
              + " characters long, was "
              + name.length());
    }
    if (!PLAIN_IDENTIFIER.matcher(name).matches()) {
      throw new IllegalArgumentException(
          field
              + " must be a plain identifier (lower-case letters, digits and '_', not starting with"
              + " a digit), was '"
              + name.replaceAll("\\p{Cntrl}", "?")
              + "'");
    }
    return "\"" + name + "\"";
  }

  /**
   * The statements of {@value #WAL_RELAY_GRANTS_SCRIPT} with the names filled in, one per element,
   * without comments or trailing semicolons: {@code ALTER ROLE <relayRole> REPLICATION} and {@code
   * CREATE PUBLICATION <publication> FOR TABLE <schema>.outbox_events WITH (publish = 'insert')}.
   *
   * @throws IllegalArgumentException naming the first argument that is not a plain identifier
   */
  public static List<String> walRelayGrantStatements(
      String schema, String relayRole, String publication) {
    String script =
        readScript(WAL_RELAY_GRANTS_SCRIPT)
            .replace(":\"schema\"", quoted("schema", schema))
            .replace(":\"relay_role\"", quoted("relayRole", relayRole))
            .replace(":\"publication\"", quoted("publication", publication));
    return statements(WAL_RELAY_GRANTS_SCRIPT, script);
  }

  /**
   * Gives the relay role what the WAL relay needs on top of {@link #grant}: runs {@link
   * #walRelayGrantStatements} in one transaction on a connection of {@code dataSource}, which must
   * be a superuser ({@code ALTER ROLE .. REPLICATION} needs one on PostgreSQL 15 and older; 16 and
   * later also allow a {@code CREATEROLE} role that has {@code REPLICATION} itself, if it owns the
   * table). Run {@link #grant} first; the role must exist. Idempotent: a publication {@code
   * publication} that already includes {@code <schema>.outbox_events} is left as it is.
   *
   * <pre>{@code
   * OutboxRoles.grant(superuser, "outbox", "orders_app", "orders_relay", "orders_consumer");
   * OutboxRoles.grantWalRelay(superuser, "outbox", "orders_relay", "pgoutbox_outbox");
   * // WalRelay.builder().schema("outbox").publicationName("pgoutbox_outbox"), as orders_relay
   * }</pre>
   *
   * @throws IllegalArgumentException naming the first argument that is not a plain identifier
   * @throws IllegalStateException with PostgreSQL's reason if a statement fails (nothing granted),
   *     or if {@code publication} exists without the outbox table
   */
  public static void grantWalRelay(
      DataSource dataSource, String schema, String relayRole, String publication) {
    requireNonNull(dataSource, "dataSource");
    runInOneTransaction(
        dataSource,
        walRelayGrantStatements(schema, relayRole, publication),
        (connection, sql) ->
            sql.startsWith("CREATE PUBLICATION ")
                && publicationExists(connection, schema, publication),
        "grant the WAL relay's privileges to " + relayRole + " on schema " + schema);
  }

  /**
   * The statements of {@value #WAL_MESSAGES_GRANTS_SCRIPT} with the names filled in, one per
   * element, without comments or trailing semicolons.
   *
   * @throws IllegalArgumentException naming the first argument that is not a plain identifier
   */
  public static List<String> walMessagesGrantStatements(
      String schema, String writerRole, String relayRole) {
    String writer = quoted("writerRole", writerRole);
    String script =
        readScript(WAL_MESSAGES_GRANTS_SCRIPT)
            .replace(":\"schema\"", quoted("schema", schema))
            .replace(":'writer_role'", "'" + writer.substring(1, writer.length() - 1) + "'")
            .replace(":\"relay_role\"", quoted("relayRole", relayRole));
    return statements(WAL_MESSAGES_GRANTS_SCRIPT, script);
  }

  /**
   * Makes the message transport safe and usable: takes {@code EXECUTE} on every overload of {@code
   * pg_catalog.pg_logical_emit_message} from {@code PUBLIC} and grants it to {@code writerRole}
   * (the function is executable by every role out of the box, so any role could forge an event the
   * WAL relay would publish), and grants {@code relayRole} {@code INSERT} on the columns it fills
   * when it parks a failed event. Runs {@link #walMessagesGrantStatements} in one transaction on
   * {@code superuser}, which must be a superuser, in the outbox's database. Idempotent.
   *
   * <pre>{@code
   * OutboxRoles.grant(superuser, "outbox", "orders_app", "orders_relay", "orders_consumer");
   * OutboxRoles.grantWalRelay(superuser, "outbox", "orders_relay", "pgoutbox_outbox");
   * OutboxRoles.grantWalMessages(superuser, "outbox", "orders_app", "orders_relay");
   * }</pre>
   *
   * @throws IllegalArgumentException naming the first argument that is not a plain identifier
   * @throws IllegalStateException with PostgreSQL's reason if a statement fails (nothing changed)
   */
  public static void grantWalMessages(
      DataSource superuser, String schema, String writerRole, String relayRole) {
    requireNonNull(superuser, "superuser");
    runInOneTransaction(
        superuser,
        walMessagesGrantStatements(schema, writerRole, relayRole),
        (connection, sql) -> false,
        "grant the message transport's privileges on schema " + schema);
  }

  /** Whether a statement's effect is there already, so that it is skipped. */
  private interface AlreadyDone {
    boolean test(Connection connection, String sql) throws SQLException;
  }

  /**
   * Runs {@code statements} in one transaction on a connection of {@code dataSource}, skipping
   * those {@code alreadyDone} names; nothing is kept if one fails.
   *
   * @throws IllegalStateException "Could not {@code what}" with PostgreSQL's reason
   */
  private static void runInOneTransaction(
      DataSource dataSource, List<String> statements, AlreadyDone alreadyDone, String what) {
    try (Connection connection = dataSource.getConnection()) {
      boolean autoCommit = connection.getAutoCommit();
      connection.setAutoCommit(false);
      try (Statement statement = connection.createStatement()) {
        for (String sql : statements) {
          if (!alreadyDone.test(connection, sql)) {
            statement.execute(sql);
          }
        }
        connection.commit();
      } catch (SQLException | RuntimeException e) {
        connection.rollback();
        throw e;
      } finally {
        connection.setAutoCommit(autoCommit);
      }
    } catch (SQLException e) {
      throw new IllegalStateException("Could not " + what + ": " + e.getMessage(), e);
    }
  }

  /** Whether {@code publication} exists; refuses one that does not include the outbox table. */
  private static boolean publicationExists(Connection connection, String schema, String publication)
      throws SQLException {
    try (PreparedStatement ps =
        connection.prepareStatement(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_publication_tables WHERE pubname = ?"
                + " AND schemaname = ? AND tablename = 'outbox_events')"
                + " FROM pg_catalog.pg_publication WHERE pubname = ?")) {
      ps.setString(1, publication);
      ps.setString(2, schema);
      ps.setString(3, publication);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return false;
        }
        if (!rs.getBoolean(1)) {
          throw new IllegalStateException(
              "publication "
                  + publication
                  + " exists but does not include "
                  + schema
                  + ".outbox_events: run ALTER PUBLICATION "
                  + publication
                  + " ADD TABLE "
                  + schema
                  + ".outbox_events, or choose another publication name");
        }
        return true;
      }
    }
  }

  /** A script's statements: comments and blank lines dropped, each ending at its ';'. */
  private static List<String> statements(String resource, String script) {
    List<String> statements = new ArrayList<>();
    StringBuilder current = new StringBuilder();
    for (String line : script.split("\n", -1)) {
      String trimmed = line.strip();
      if (trimmed.isEmpty() || trimmed.startsWith("--")) {
        continue;
      }
      current.append(current.isEmpty() ? "" : " ").append(trimmed);
      if (trimmed.endsWith(";")) {
        statements.add(current.substring(0, current.length() - 1));
        current.setLength(0);
      }
    }
    if (!current.isEmpty()) {
      throw new IllegalStateException(resource + " ends without ';': " + current);
    }
    return List.copyOf(statements);
  }

  private static String readScript(String resource) {
    try (InputStream in = OutboxRoles.class.getClassLoader().getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException(resource + " is missing from the classpath");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("Could not read " + resource, e);
    }
  }
}

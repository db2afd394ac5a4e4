package dev.pgoutbox.db;

import static java.util.Objects.requireNonNull;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
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
        readScript()
            .replace(":\"schema\"", quoted("schema", schema))
            .replace(":\"writer_role\"", quoted("writerRole", writerRole))
            .replace(":\"relay_role\"", quoted("relayRole", relayRole))
            .replace(":\"consumer_role\"", quoted("consumerRole", consumerRole));
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
      throw new IllegalStateException(GRANTS_SCRIPT + " ends without ';': " + current);
    }
    return List.copyOf(statements);
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

  private static String readScript() {
    try (InputStream in = OutboxRoles.class.getClassLoader().getResourceAsStream(GRANTS_SCRIPT)) {
      if (in == null) {
        throw new IllegalStateException(GRANTS_SCRIPT + " is missing from the classpath");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("Could not read " + GRANTS_SCRIPT, e);
    }
  }
}

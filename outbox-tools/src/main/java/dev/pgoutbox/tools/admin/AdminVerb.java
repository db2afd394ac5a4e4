package dev.pgoutbox.tools.admin;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.pgoutbox.admin.OutboxAdmin;
import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.testing.Secrets;
import java.io.PrintWriter;
import java.sql.SQLException;
import java.util.concurrent.Callable;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.postgresql.ds.PGSimpleDataSource;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * What every {@code admin} verb shares: the connection options, {@code --json}, the admin on the
 * outbox, and the translation of failures into one clear line and an exit code.
 */
abstract class AdminVerb implements Callable<Integer> {

  /** Done; {@code status}: healthy. */
  static final int OK = 0;

  /** {@code status}: degraded; else nothing done (unknown id, not confirmed). */
  static final int NOTHING_DONE = 1;

  /** Unreachable or refused: wrong URL, missing schema, missing grant, bad option. */
  static final int FAILED = 2;

  @ParentCommand AdminCommand parent;

  @Spec CommandSpec spec;

  @Option(
      names = "--jdbc-url",
      paramLabel = "URL",
      description =
          "PostgreSQL JDBC URL of the database holding the outbox (default: the environment"
              + " variable PGOUTBOX_JDBC_URL)")
  @Nullable String jdbcUrl;

  @Option(
      names = "--schema",
      paramLabel = "NAME",
      defaultValue = OutboxSchema.DEFAULT_SCHEMA,
      description = "Schema of the outbox (default: ${DEFAULT-VALUE})")
  String schema = OutboxSchema.DEFAULT_SCHEMA;

  @Option(names = "--json", description = "Print one JSON document instead of text")
  boolean json;

  /** The masked URL, for messages. */
  private String shownUrl = "";

  @Override
  public final Integer call() {
    try {
      String url =
          jdbcUrl != null ? jdbcUrl : parent.environment.get(AdminCommand.JDBC_URL_VARIABLE);
      if (url == null || url.isBlank()) {
        throw new AdminFailure(
            "no database given: pass --jdbc-url or set " + AdminCommand.JDBC_URL_VARIABLE);
      }
      shownUrl = Secrets.mask(url);
      OutboxAdmin admin =
          OutboxAdmin.builder()
              .dataSource(connections(dataSource(url)))
              .schema(validSchema())
              .build();
      return run(admin);
    } catch (AdminFailure e) {
      return fail(e.getMessage());
    } catch (RuntimeException e) {
      return fail(explain(e));
    }
  }

  /**
   * The data source the admin uses: a new connection per call, fine for a verb that runs once; a
   * long-running verb ({@code serve}) puts a pool around it.
   */
  DataSource connections(PGSimpleDataSource dataSource) {
    return dataSource;
  }

  /** Runs the verb on the outbox; returns the exit code. */
  abstract int run(OutboxAdmin admin);

  /** The exit code of a failure; {@code status} answers "unreachable" with the same code. */
  int fail(String message) {
    err().println("pgoutbox-admin: " + message);
    if (json) {
      ObjectNode error = AdminJson.object();
      error.put("error", message);
      error.put("exit_code", FAILED);
      printJson(error);
    }
    return FAILED;
  }

  PrintWriter out() {
    return spec.commandLine().getOut();
  }

  PrintWriter err() {
    return spec.commandLine().getErr();
  }

  void printJson(JsonNode document) {
    out().println(AdminJson.write(document));
    out().flush();
  }

  String shownUrl() {
    return shownUrl;
  }

  private String validSchema() {
    try {
      return OutboxSchema.requireValidName(schema);
    } catch (IllegalArgumentException e) {
      throw new AdminFailure("--schema: " + e.getMessage());
    }
  }

  private PGSimpleDataSource dataSource(String url) {
    if (!url.startsWith("jdbc:postgresql:")) {
      throw new AdminFailure(
          "--jdbc-url must be a PostgreSQL JDBC URL (jdbc:postgresql://host:port/database), was '"
              + Secrets.mask(url)
              + "'");
    }
    PGSimpleDataSource dataSource = new PGSimpleDataSource();
    try {
      dataSource.setURL(url);
    } catch (IllegalArgumentException e) {
      throw new AdminFailure("--jdbc-url is not a valid PostgreSQL JDBC URL: " + Secrets.mask(url));
    }
    if (dataSource.getConnectTimeout() == 0 || dataSource.getConnectTimeout() > 10) {
      dataSource.setConnectTimeout(5);
    }
    if (dataSource.getSocketTimeout() == 0) {
      dataSource.setSocketTimeout(60);
    }
    dataSource.setApplicationName("pgoutbox-admin");
    return dataSource;
  }

  /**
   * One line saying what failed: the database out of reach, a grant missing, or the admin's own
   * message (which names the missing schema or privilege); secrets of the URL masked.
   */
  private String explain(RuntimeException failure) {
    SQLException sql = null;
    for (Throwable t = failure; t != null; t = t.getCause()) {
      if (t instanceof SQLException s) {
        sql = s;
        break;
      }
    }
    String state = sql == null || sql.getSQLState() == null ? "" : sql.getSQLState();
    String detail = sql != null ? sql.getMessage() : failure.getMessage();
    String message;
    if (state.startsWith("08") || state.startsWith("28") || state.equals("3D000")) {
      message = "cannot connect to " + shownUrl + ": " + detail;
    } else if (state.equals("42501")) {
      message =
          "the role lacks a privilege ("
              + detail
              + "): grant it the relay role's privileges (db/pgoutbox/roles/grants.sql)";
    } else if (state.equals("42P01") || state.equals("3F000")) {
      message = "schema '" + schema + "' holds no pgoutbox outbox: " + detail;
    } else {
      message = failure.getMessage() == null ? failure.toString() : failure.getMessage();
    }
    return Secrets.mask(message == null ? "" : message);
  }

  /** A failure whose message is the whole story, ready for the operator. */
  static final class AdminFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;

    AdminFailure(String message) {
      super(message);
    }
  }
}

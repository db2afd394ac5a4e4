package dev.pgoutbox.tools.bench;

import dev.pgoutbox.core.OutboxTransport;
import dev.pgoutbox.db.OutboxRoles;
import java.util.Locale;
import picocli.CommandLine.Option;

/**
 * {@code --transport rows|messages}: how the bench's writers write events (and which events the WAL
 * relay reads). The option's name and values are a contract that the checks use.
 */
public final class TransportOption {

  @Option(
      names = "--transport",
      defaultValue = "rows",
      description =
          "rows: events are rows of outbox_events; messages: pg_logical_emit_message, no row"
              + " (needs --source wal where the command has one; the bench takes EXECUTE on the"
              + " function from PUBLIC in its database and grants it to its own role, as the"
              + " relay requires) (default ${DEFAULT-VALUE})")
  String transport = "rows";

  /** The transport, or an error naming the option and its values. */
  public OutboxTransport value() {
    return switch (transport.toLowerCase(Locale.ROOT)) {
      case "rows" -> OutboxTransport.ROWS;
      case "messages" -> OutboxTransport.MESSAGES;
      default ->
          throw new IllegalArgumentException(
              "--transport must be rows or messages, was '" + transport + "'");
    };
  }

  /** Whether events are messages. */
  boolean messages() {
    return value() == OutboxTransport.MESSAGES;
  }

  /** The option's text for results: {@code rows} or {@code messages}. */
  String label() {
    return value().name().toLowerCase(Locale.ROOT);
  }

  /**
   * For messages: takes EXECUTE on pg_logical_emit_message from PUBLIC and grants it to the bench's
   * role (the WAL relay refuses to start otherwise); needs a superuser, as in production.
   */
  void prepare(BenchDatabase db) throws Exception {
    if (messages()) {
      grantMessages(db);
    }
  }

  /** {@link #prepare} for the messages transport, on {@code db}'s current schema. */
  static void grantMessages(BenchDatabase db) throws Exception {
    String role;
    try (var c = db.connect();
        var s = c.createStatement();
        var rs = s.executeQuery("SELECT current_user")) {
      rs.next();
      role = rs.getString(1);
    }
    OutboxRoles.grantWalMessages(db.pool(1), db.schema(), role, role);
  }
}

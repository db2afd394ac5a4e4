package dev.pgoutbox.tools.admin;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * {@code admin}: look at an outbox and act on it from a terminal or a script. Each verb connects
 * with {@code --jdbc-url} (or {@code PGOUTBOX_JDBC_URL}), reads or writes through {@link
 * dev.pgoutbox.admin.OutboxAdmin}, and prints text or, with {@code --json}, one JSON document.
 */
@Command(
    name = "admin",
    mixinStandardHelpOptions = true,
    description = {
      "Looks at an outbox and acts on it: status, dead letters, one event, retry, discard;"
          + " serve runs the web console.",
      "Connects with --jdbc-url or the environment variable PGOUTBOX_JDBC_URL; --json prints one"
          + " JSON document per call.",
      "Exit codes: 0 done (status: healthy), 1 degraded / nothing done / unknown id, 2 unreachable"
          + " or refused (wrong URL, missing schema, missing grant, bad option)."
    },
    subcommands = {
      StatusCommand.class,
      DeadLettersCommand.class,
      ShowCommand.class,
      RetryCommand.class,
      DiscardCommand.class,
      ServeCommand.class
    })
public final class AdminCommand implements Runnable {

  /** The environment variable read when {@code --jdbc-url} is not given. */
  public static final String JDBC_URL_VARIABLE = "PGOUTBOX_JDBC_URL";

  @Spec CommandSpec spec;

  /** Where {@link #JDBC_URL_VARIABLE} is read; a test replaces it. */
  Map<String, String> environment = System.getenv();

  /** Where confirmations are read; a test replaces it. */
  BufferedReader input =
      new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));

  /** Creates the command; picocli calls it. */
  public AdminCommand() {}

  /** Replaces the environment and the input the confirmations are read from (for tests). */
  public AdminCommand with(Map<String, String> environment, BufferedReader input) {
    this.environment = environment;
    this.input = input;
    return this;
  }

  /** Without a verb: the usage. */
  @Override
  public void run() {
    CommandLine commandLine = spec.commandLine();
    commandLine.usage(commandLine.getOut());
  }
}

package dev.pgoutbox.example;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * {@code java -jar pgoutbox-example.jar <command>}: the example order service ({@code serve}) and
 * its scripted walk-through ({@code demo}). The benchmark harness, the standalone relay and the
 * chaos run are in {@code pgoutbox-tools}.
 */
@Command(
    name = "pgoutbox-example",
    mixinStandardHelpOptions = true,
    versionProvider = Main.Version.class,
    description = "The pgoutbox example: an order service with the transactional outbox.",
    subcommands = {ServeCommand.class, DemoCommand.class, CommandLine.HelpCommand.class})
public final class Main implements Runnable {

  @Spec CommandSpec spec;

  /** Runs the command line and exits with its exit code. */
  public static void main(String[] args) {
    System.exit(new CommandLine(new Main()).execute(args));
  }

  /** Without a command: the usage. */
  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }

  /** The version from the jar's manifest. */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      String version = Main.class.getPackage().getImplementationVersion();
      return new String[] {"pgoutbox-example " + (version == null ? "(development)" : version)};
    }
  }
}

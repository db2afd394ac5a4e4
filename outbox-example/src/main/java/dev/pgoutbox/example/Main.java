package dev.pgoutbox.example;

import dev.pgoutbox.example.bench.BenchCommand;
import dev.pgoutbox.example.chaos.ChaosCommand;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * {@code java -jar pgoutbox-example.jar <command>}: the example order service ({@code serve}), its
 * scripted walk-through ({@code demo}), the benchmark harness ({@code bench}), a standalone relay
 * process ({@code relay}) and the fault-injection run ({@code chaos}).
 */
@Command(
    name = "pgoutbox-example",
    mixinStandardHelpOptions = true,
    versionProvider = Main.Version.class,
    description = "The pgoutbox example: an order service with the transactional outbox.",
    subcommands = {
      ServeCommand.class,
      DemoCommand.class,
      BenchCommand.class,
      RelayCommand.class,
      ChaosCommand.class,
      CommandLine.HelpCommand.class
    })
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

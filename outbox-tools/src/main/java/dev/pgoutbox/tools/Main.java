package dev.pgoutbox.tools;

import dev.pgoutbox.tools.admin.AdminCommand;
import dev.pgoutbox.tools.bench.BenchCommand;
import dev.pgoutbox.tools.chaos.ChaosCommand;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * {@code java -jar pgoutbox-tools.jar <command>}: the benchmark harness ({@code bench}), a
 * standalone relay process ({@code relay}), the fault-injection run ({@code chaos}) and the on-call
 * command line ({@code admin}). They use pgoutbox's public API only.
 */
@Command(
    name = "pgoutbox-tools",
    mixinStandardHelpOptions = true,
    versionProvider = Main.Version.class,
    description =
        "pgoutbox's operator tools: benchmarks, a standalone relay, the chaos run, the admin.",
    subcommands = {
      BenchCommand.class,
      RelayCommand.class,
      ChaosCommand.class,
      AdminCommand.class,
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
      return new String[] {"pgoutbox-tools " + (version == null ? "(development)" : version)};
    }
  }
}

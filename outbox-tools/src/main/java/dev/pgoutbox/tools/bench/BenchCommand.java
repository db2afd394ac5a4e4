package dev.pgoutbox.tools.bench;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code bench <scenario>}: the figures behind every performance claim of pgoutbox. See
 * docs/performance.md for the commands and the results on a reference machine.
 */
@Command(
    name = "bench",
    mixinStandardHelpOptions = true,
    description =
        "Measure pgoutbox; each scenario also verifies what it can (nothing lost, nothing"
            + " reordered) and prints only figures it measured.",
    subcommands = {
      DrainCommand.class,
      CeilingCommand.class,
      BaselineCommand.class,
      LimitCommand.class,
      LatencyCommand.class,
      SoakCommand.class,
      WriterCommand.class,
      HistoryCommand.class
    })
public final class BenchCommand implements Runnable {

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(System.out);
  }

  /** Runs the harness on its own: {@code java -cp ... dev.pgoutbox.tools.bench.BenchCommand}. */
  public static void main(String[] args) {
    System.exit(new CommandLine(new BenchCommand()).execute(args));
  }
}

package dev.pgoutbox.tools.chaos;

import dev.pgoutbox.testing.Signals;
import dev.pgoutbox.tools.Main;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * The relay processes of a chaos run: each a separate JVM running the {@code relay} command of this
 * same program (same java, same class path), logging to {@code relay-<n>.log} in the run's
 * directory. Thread-safe.
 */
final class RelayFleet implements AutoCloseable {

  private final List<String> command;
  private final Path logDir;
  private final @Nullable Process[] processes;
  private int kills;
  private int starts;

  RelayFleet(int relays, List<String> relayArguments, Path logDir) {
    String java = ProcessHandle.current().info().command().orElse("java");
    this.command = new ArrayList<>();
    command.addAll(
        List.of(
            java,
            "-Xmx256m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-cp",
            System.getProperty("java.class.path"),
            Main.class.getName(),
            "relay"));
    command.addAll(relayArguments);
    this.logDir = logDir;
    this.processes = new Process[relays];
  }

  int size() {
    return processes.length;
  }

  static String name(int index) {
    return "relay-" + (index + 1);
  }

  /**
   * The last {@code lines} lines of each relay's log that say what the relay did (started,
   * attached, stood by, lost a connection), without stack frames or per-event publish failures:
   * what a failed run prints so that its cause shows in a CI log, where the run's directory is
   * gone.
   */
  List<String> logTails(int lines) {
    List<String> tails = new ArrayList<>();
    for (int i = 0; i < processes.length; i++) {
      Path file = logDir.resolve(name(i) + ".log");
      tails.add("--- " + name(i) + ".log, last " + lines + " lines of relay state:");
      try (var all = Files.lines(file)) {
        List<String> kept = all.filter(RelayFleet::saysWhatTheRelayDid).toList();
        kept.subList(Math.max(0, kept.size() - lines), kept.size()).forEach(tails::add);
      } catch (IOException | UncheckedIOException e) {
        tails.add("(could not read " + file + ": " + e + ")");
      }
    }
    return tails;
  }

  private static boolean saysWhatTheRelayDid(String line) {
    String trimmed = line.strip();
    return !trimmed.isEmpty()
        && !trimmed.startsWith("at ")
        && !trimmed.startsWith("...")
        && !line.contains("Publish failed")
        && !line.contains("dead-lettered after")
        && !line.startsWith("chaos-publisher-fault kind=");
  }

  /** Starts every relay. */
  synchronized void startAll() throws IOException {
    for (int i = 0; i < processes.length; i++) {
      start(i);
    }
  }

  /** Starts relay {@code index} if it is not running. */
  synchronized void start(int index) throws IOException {
    Process running = processes[index];
    if (running != null && running.isAlive()) {
      return;
    }
    List<String> args = new ArrayList<>(command);
    args.addAll(List.of("--name", name(index)));
    processes[index] =
        new ProcessBuilder(args)
            .redirectErrorStream(true)
            .redirectOutput(
                ProcessBuilder.Redirect.appendTo(logDir.resolve(name(index) + ".log").toFile()))
            .start();
    starts++;
  }

  /** Kills relay {@code index} with SIGKILL and waits until it is gone. */
  synchronized void kill(int index) throws InterruptedException {
    Process process = processes[index];
    if (process != null && process.isAlive()) {
      process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
      kills++;
    }
  }

  /**
   * Kills every relay with SIGKILL and waits until they are gone, to start them all again (not
   * counted in {@link #kills()}: an operator's restart, not a fault).
   */
  synchronized void killAll() throws InterruptedException {
    for (Process process : processes) {
      if (process != null && process.isAlive()) {
        process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
      }
    }
  }

  /** Freezes relay {@code index} with SIGSTOP: it holds its connections and does nothing. */
  synchronized void freeze(int index) {
    signal(index, "STOP");
  }

  /** Wakes a frozen relay with SIGCONT. */
  synchronized void thaw(int index) {
    signal(index, "CONT");
  }

  private void signal(int index, String signal) {
    Process process = processes[index];
    if (process == null || !process.isAlive()) {
      throw new IllegalStateException(name(index) + " is not running");
    }
    Signals.send(signal, List.of(process.pid()));
  }

  /** Lines of every relay's log that contain {@code text}. */
  long linesInLogs(String text) {
    long found = 0;
    for (int i = 0; i < processes.length; i++) {
      Path file = logDir.resolve(name(i) + ".log");
      if (!Files.exists(file)) {
        continue;
      }
      try (var lines = Files.lines(file)) {
        found += lines.filter(l -> l.contains(text)).count();
      } catch (IOException | UncheckedIOException e) {
        // A log being written: counted at the next look.
      }
    }
    return found;
  }

  /** Relays killed with SIGKILL so far. */
  synchronized int kills() {
    return kills;
  }

  /** Relay processes started so far, restarts included. */
  synchronized int starts() {
    return starts;
  }

  /** Relays that exited on their own (not killed by the run): a relay must never give up. */
  synchronized List<String> exitedOnTheirOwn() {
    List<String> exited = new ArrayList<>();
    for (int i = 0; i < processes.length; i++) {
      Process process = processes[i];
      if (process != null && !process.isAlive()) {
        exited.add(name(i) + " (exit " + process.exitValue() + ")");
      }
    }
    return exited;
  }

  /** Stops every relay with SIGTERM (a graceful stop), SIGKILL after 20 s. */
  @Override
  public synchronized void close() {
    for (Process process : processes) {
      if (process != null) {
        process.destroy();
      }
    }
    for (Process process : processes) {
      if (process == null) {
        continue;
      }
      try {
        if (!process.waitFor(20, TimeUnit.SECONDS)) {
          process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
      } catch (InterruptedException e) {
        process.destroyForcibly();
        Thread.currentThread().interrupt();
      }
    }
  }
}

package dev.pgoutbox.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Sends POSIX signals with {@code kill}, for the ones {@link ProcessHandle} cannot send (SIGSTOP,
 * SIGCONT) and to signal many processes in one call.
 */
public final class Signals {

  private Signals() {}

  /**
   * Sends {@code signal} (a name such as {@code STOP}, {@code CONT}, {@code KILL}) to every pid.
   *
   * @throws IllegalStateException if {@code kill} fails (a pid not running, say), with its output
   * @throws UncheckedIOException if {@code kill} cannot be run
   */
  public static void send(String signal, List<Long> pids) {
    List<String> command = new ArrayList<>(List.of("kill", "-" + signal));
    pids.forEach(pid -> command.add(Long.toString(pid)));
    try {
      Process kill = new ProcessBuilder(command).redirectErrorStream(true).start();
      String output = new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (kill.waitFor() != 0) {
        throw new IllegalStateException(
            "kill -" + signal + " " + pids + " failed: " + output.trim());
      }
    } catch (IOException e) {
      throw new UncheckedIOException("Could not run kill -" + signal, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted while sending SIG" + signal, e);
    }
  }
}

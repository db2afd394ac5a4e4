package dev.pgoutbox.testing;

import java.io.IOException;
import java.net.InetAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * What the servers tests start as child processes ({@link NatsServer}, {@link PgBouncer}) share.
 */
final class ChildProcesses {

  private ChildProcesses() {}

  /**
   * Waits up to {@code deadline} until {@code process} accepts connections on loopback {@code
   * port}; false when it did not, or when it ended meanwhile.
   */
  static boolean awaitListening(Process process, int port, Duration deadline) {
    boolean listening =
        Eventually.holdsWithin(
            () -> {
              if (!process.isAlive()) {
                return true; // reported below
              }
              try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
                return s.isConnected();
              } catch (IOException e) {
                return false;
              }
            },
            deadline);
    return listening && process.isAlive();
  }

  /** Stops {@code process}: SIGTERM, then SIGKILL after 10 s. */
  static void stop(Process process) {
    process.destroy();
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      process.destroyForcibly();
    }
  }
}

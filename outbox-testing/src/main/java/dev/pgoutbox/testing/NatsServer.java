package dev.pgoutbox.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * A NATS server with JetStream of its own: the machine's {@code nats-server} binary ({@code
 * $NATS_SERVER}, else {@code /usr/sbin/nats-server}) on a free loopback port with a temporary
 * store, so a test or the chaos run can stop and restart it without touching a shared server.
 *
 * <pre>{@code
 * try (NatsServer nats = NatsServer.start()) {
 *   Connection connection = Nats.connect(nats.url());
 *   nats.stop();      // an outage: clients see the server go away
 *   nats.restart();   // back on the same port, with the same store
 * }
 * }</pre>
 *
 * <p>Its output goes to a log file beside the store. Thread-safe; {@link #close()} stops the server
 * and deletes the store.
 */
public final class NatsServer implements AutoCloseable {

  private static final Duration START_DEADLINE = Duration.ofSeconds(15);

  private final Path storeDir;
  private final int port;
  private @Nullable Process process;

  private NatsServer(Path storeDir, int port) {
    this.storeDir = storeDir;
    this.port = port;
  }

  /**
   * Starts a server and waits until it accepts connections.
   *
   * @throws UncheckedIOException if the binary cannot be run or does not listen within 15 s
   */
  public static NatsServer start() {
    NatsServer server;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      server = new NatsServer(Files.createTempDirectory("pgoutbox-nats"), s.getLocalPort());
    } catch (IOException e) {
      throw new UncheckedIOException("Could not prepare a nats-server: " + e.getMessage(), e);
    }
    server.restart();
    return server;
  }

  /** The URL clients connect to. */
  public String url() {
    return "nats://127.0.0.1:" + port;
  }

  /** The server's port on the loopback interface. */
  public int port() {
    return port;
  }

  /** Whether the server process runs. */
  public synchronized boolean isRunning() {
    return process != null && process.isAlive();
  }

  /** Stops the server (SIGTERM, then waits); its store stays for {@link #restart()}. */
  public synchronized void stop() {
    Process p = process;
    process = null;
    if (p != null) {
      ChildProcesses.stop(p);
    }
  }

  /**
   * Starts the server again on the same port and store, and waits until it accepts connections.
   * No-op if it runs.
   *
   * @throws UncheckedIOException if the binary cannot be run or does not listen within 15 s
   */
  public synchronized void restart() {
    if (process != null) {
      return;
    }
    String binary = System.getenv().getOrDefault("NATS_SERVER", "/usr/sbin/nats-server");
    Process started;
    try {
      started =
          new ProcessBuilder(
                  binary,
                  "-a",
                  "127.0.0.1",
                  "-p",
                  Integer.toString(port),
                  "-js",
                  "-sd",
                  storeDir.toString())
              .redirectErrorStream(true)
              .redirectOutput(
                  ProcessBuilder.Redirect.appendTo(
                      storeDir.resolveSibling(storeDir.getFileName() + ".log").toFile()))
              .start();
    } catch (IOException e) {
      throw new UncheckedIOException("Could not run " + binary + ": " + e.getMessage(), e);
    }
    process = started;
    if (!ChildProcesses.awaitListening(started, port, START_DEADLINE)) {
      stop();
      throw new UncheckedIOException(
          new IOException(
              "nats-server ("
                  + binary
                  + ") did not listen on port "
                  + port
                  + " within "
                  + START_DEADLINE.toSeconds()
                  + " s"));
    }
  }

  /** Stops the server and deletes its store. */
  @Override
  public void close() {
    stop();
    Files2.deleteRecursively(storeDir);
  }

  @Override
  public String toString() {
    return "NatsServer[" + url() + (isRunning() ? "" : ", stopped") + "]";
  }
}

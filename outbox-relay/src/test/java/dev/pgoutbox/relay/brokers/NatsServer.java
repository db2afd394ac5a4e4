package dev.pgoutbox.relay.brokers;

import dev.pgoutbox.db.testing.Eventually;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A NATS server with JetStream of the test's own ({@code /usr/sbin/nats-server}, or {@code
 * NATS_SERVER} from the environment), on a free loopback port with a temporary store, so a test can
 * stop and restart it without touching the machine's shared server.
 */
public final class NatsServer implements AutoCloseable {

  private final Path storeDir;
  private final int port;
  private Process process;

  private NatsServer(Path storeDir, int port) {
    this.storeDir = storeDir;
    this.port = port;
  }

  /** Starts a server and waits until it accepts connections. */
  public static NatsServer start() throws IOException, InterruptedException {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    NatsServer server = new NatsServer(Files.createTempDirectory("pgoutbox-nats"), port);
    server.restart();
    return server;
  }

  /** The URL clients connect to. */
  public String url() {
    return "nats://127.0.0.1:" + port;
  }

  /** Stops the server (SIGTERM, then waits); its store stays for {@link #restart()}. */
  public synchronized void stop() throws InterruptedException {
    if (process != null) {
      process.destroy();
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor();
      }
      process = null;
    }
  }

  /** Starts the server again on the same port and store, and waits until it accepts connections. */
  public synchronized void restart() throws IOException, InterruptedException {
    if (process != null) {
      return;
    }
    String binary = System.getenv().getOrDefault("NATS_SERVER", "/usr/sbin/nats-server");
    process =
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
            .redirectOutput(storeDir.resolveSibling(storeDir.getFileName() + ".log").toFile())
            .start();
    Eventually.await(
        "nats-server on port " + port,
        Duration.ofSeconds(15),
        () -> {
          if (!process.isAlive()) {
            throw new AssertionError("nats-server exited with " + process.exitValue());
          }
          try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
            return s.isConnected();
          } catch (IOException e) {
            return false;
          }
        });
  }

  @Override
  public void close() throws IOException {
    try {
      stop();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    try (Stream<Path> files = Files.walk(storeDir)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }
}

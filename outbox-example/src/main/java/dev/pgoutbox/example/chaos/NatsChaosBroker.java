package dev.pgoutbox.example.chaos;

import dev.pgoutbox.example.infra.Files2;
import dev.pgoutbox.example.verify.DeliveryChecker;
import io.nats.client.Connection;
import io.nats.client.Nats;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;

/**
 * NATS JetStream for the chaos run: a {@code nats-server} of the run's own (the machine's binary,
 * {@code $NATS_SERVER} or {@code /usr/sbin/nats-server}) on a free port with a temporary store; the
 * outage stops the process and starts it again on the same store. The checker reads the stream by
 * sequence number ({@link NatsStreamFeed}).
 */
final class NatsChaosBroker implements ChaosBroker {

  static final String STREAM = "PGOUTBOX_CHAOS";
  static final String PREFIX = "chaos";

  private final Path storeDir;
  private final int port;
  private @Nullable Process process;

  private NatsChaosBroker(Path storeDir, int port) {
    this.storeDir = storeDir;
    this.port = port;
  }

  static NatsChaosBroker start() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    NatsChaosBroker broker = new NatsChaosBroker(Files.createTempDirectory("pgoutbox-nats"), port);
    broker.resume();
    try {
      Connection admin = Nats.connect(broker.url());
      try {
        admin
            .jetStreamManagement()
            .addStream(
                StreamConfiguration.builder()
                    .name(STREAM)
                    .subjects(PREFIX + ".>")
                    .storageType(StorageType.File)
                    .build());
      } finally {
        admin.close();
      }
    } catch (Exception e) {
      broker.close();
      throw e;
    }
    return broker;
  }

  int port() {
    return port;
  }

  String url() {
    return "nats://127.0.0.1:" + port;
  }

  @Override
  public String describe() {
    return "nats (own nats-server, " + url() + ", stream " + STREAM + ")";
  }

  @Override
  public List<String> relayArguments() {
    return List.of("--nats", url(), "--topic", PREFIX);
  }

  @Override
  public CheckerFeed consume(DeliveryChecker checker) throws Exception {
    return consume(checker, url());
  }

  /** The checker reading through {@code checkerUrl} (a test puts a proxy there). */
  CheckerFeed consume(DeliveryChecker checker, String checkerUrl) throws Exception {
    return new NatsStreamFeed(checker, STREAM, checkerUrl, url());
  }

  private static void pause() {
    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
  }

  @Override
  public String outage() {
    return "nats-server stopped";
  }

  @Override
  public synchronized void interrupt() throws InterruptedException {
    Process p = process;
    process = null;
    if (p != null) {
      p.destroy();
      if (!p.waitFor(10, TimeUnit.SECONDS)) {
        p.destroyForcibly().waitFor();
      }
    }
  }

  @Override
  public synchronized void resume() throws IOException {
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
            .redirectOutput(
                ProcessBuilder.Redirect.appendTo(storeDir.resolve("nats-server.log").toFile()))
            .start();
    long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
    while (System.nanoTime() < deadline) {
      try {
        new Socket(InetAddress.getLoopbackAddress(), port).close();
        return;
      } catch (IOException e) {
        pause();
      }
    }
    throw new IOException(
        "nats-server (" + binary + ") did not listen on port " + port + " in 15 s");
  }

  @Override
  public void close() {
    try {
      interrupt();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    Files2.deleteRecursively(storeDir);
  }
}

package dev.pgoutbox.tools.chaos;

import dev.pgoutbox.testing.DeliveryChecker;
import dev.pgoutbox.testing.NatsServer;
import io.nats.client.Connection;
import io.nats.client.Nats;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import java.util.List;

/**
 * NATS JetStream for the chaos run: a {@link NatsServer} of the run's own (the machine's {@code
 * nats-server}) on a free port with a temporary store; the outage stops the process and starts it
 * again on the same store. The checker reads the stream by sequence number ({@link
 * NatsStreamFeed}).
 */
final class NatsChaosBroker implements ChaosBroker {

  static final String STREAM = "PGOUTBOX_CHAOS";
  static final String PREFIX = "chaos";

  private final NatsServer server;

  private NatsChaosBroker(NatsServer server) {
    this.server = server;
  }

  static NatsChaosBroker start() throws Exception {
    NatsServer server = NatsServer.start();
    try {
      Connection admin = Nats.connect(server.url());
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
      server.close();
      throw e;
    }
    return new NatsChaosBroker(server);
  }

  int port() {
    return server.port();
  }

  String url() {
    return server.url();
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

  @Override
  public String outage() {
    return "nats-server stopped";
  }

  @Override
  public void interrupt() {
    server.stop();
  }

  @Override
  public void resume() {
    server.restart();
  }

  @Override
  public void close() {
    server.close();
  }
}

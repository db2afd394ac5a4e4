package dev.pgoutbox.testing;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import kafka.tools.StorageTool;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A real single-node Apache Kafka (KRaft mode, broker and controller in one process) running inside
 * this JVM: the example's broker when none is given, and the tests' Kafka on a machine without
 * Docker. Announces itself in the log.
 *
 * <pre>{@code
 * try (EmbeddedKafka kafka = EmbeddedKafka.start()) {
 *   kafka.createTopic("order", 8);
 *   KafkaPublisher publisher = KafkaPublisher.builder(kafka.bootstrapServers()).build();
 *   ...
 *   kafka.stop();      // an outage: clients see the broker go away
 *   kafka.restart();   // back on the same port, with the same data
 * }
 * }</pre>
 *
 * <p>Topics are created on first use ({@code auto.create.topics.enable}) with 4 partitions, or
 * explicitly with the Kafka {@code Admin} client. Thread-safe; {@link #close()} stops the broker
 * and deletes its temporary log directory.
 */
public final class EmbeddedKafka implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(EmbeddedKafka.class);

  /** Partitions of a topic created on first use. */
  public static final int DEFAULT_PARTITIONS = 4;

  private final Path logDir;
  private final Properties config;
  private final int port;
  private @Nullable KafkaRaftServer server;

  private EmbeddedKafka(Path logDir, Properties config, int port) {
    this.logDir = logDir;
    this.config = config;
    this.port = port;
  }

  /**
   * Formats a fresh log directory in the temp dir and starts the broker on a free loopback port.
   * Takes a few seconds.
   *
   * @throws UncheckedIOException if the log directory cannot be made
   * @throws IllegalStateException if formatting the storage fails, with Kafka's output
   */
  public static EmbeddedKafka start() {
    long started = System.nanoTime();
    quietKafkaLogs();
    Path dir;
    int port;
    int controllerPort;
    try {
      dir = Files.createTempDirectory("pgoutbox-kafka");
      port = freePort();
      controllerPort = freePort();
    } catch (IOException e) {
      throw new UncheckedIOException("Could not prepare the embedded Kafka: " + e.getMessage(), e);
    }
    Properties p = new Properties();
    p.putAll(
        Map.ofEntries(
            Map.entry("process.roles", "broker,controller"),
            Map.entry("node.id", "1"),
            Map.entry("controller.quorum.voters", "1@127.0.0.1:" + controllerPort),
            Map.entry(
                "listeners",
                "PLAINTEXT://127.0.0.1:" + port + ",CONTROLLER://127.0.0.1:" + controllerPort),
            Map.entry("advertised.listeners", "PLAINTEXT://127.0.0.1:" + port),
            Map.entry("controller.listener.names", "CONTROLLER"),
            Map.entry("inter.broker.listener.name", "PLAINTEXT"),
            Map.entry("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"),
            Map.entry("log.dirs", dir.resolve("data").toString()),
            Map.entry("num.partitions", String.valueOf(DEFAULT_PARTITIONS)),
            Map.entry("offsets.topic.replication.factor", "1"),
            Map.entry("offsets.topic.num.partitions", "1"),
            Map.entry("transaction.state.log.replication.factor", "1"),
            Map.entry("transaction.state.log.min.isr", "1"),
            Map.entry("transaction.state.log.num.partitions", "1"),
            Map.entry("share.coordinator.state.topic.replication.factor", "1"),
            Map.entry("share.coordinator.state.topic.min.isr", "1"),
            Map.entry("group.initial.rebalance.delay.ms", "0"),
            Map.entry("log.cleaner.dedupe.buffer.size", "2097152"),
            Map.entry("log.cleaner.threads", "1"),
            Map.entry("num.network.threads", "2"),
            Map.entry("num.io.threads", "2"),
            Map.entry("auto.create.topics.enable", "true")));
    Path file = dir.resolve("server.properties");
    try (OutputStream out = Files.newOutputStream(file)) {
      p.store(out, "pgoutbox embedded broker");
    } catch (IOException e) {
      throw new UncheckedIOException("Could not write " + file + ": " + e.getMessage(), e);
    }
    ByteArrayOutputStream formatOutput = new ByteArrayOutputStream();
    int rc;
    try (PrintStream print = new PrintStream(formatOutput, true, StandardCharsets.UTF_8)) {
      rc =
          StorageTool.execute(
              new String[] {
                "format",
                "-t",
                Uuid.randomUuid().toString(),
                "-c",
                file.toString(),
                "--ignore-formatted"
              },
              print);
    } catch (Exception e) {
      throw new IllegalStateException(
          "Formatting the embedded Kafka's log dir failed: "
              + e
              + " "
              + formatOutput.toString(StandardCharsets.UTF_8),
          e);
    }
    if (rc != 0) {
      throw new IllegalStateException(
          "Formatting the embedded Kafka's log dir failed ("
              + rc
              + "): "
              + formatOutput.toString(StandardCharsets.UTF_8));
    }
    EmbeddedKafka kafka = new EmbeddedKafka(dir, p, port);
    kafka.startServer();
    LOG.info(
        "Embedded Kafka (KRaft, single node) started in {} ms: bootstrap servers {} (logs in {})",
        Duration.ofNanos(System.nanoTime() - started).toMillis(),
        kafka.bootstrapServers(),
        dir);
    return kafka;
  }

  /** {@code host:port} for clients' {@code bootstrap.servers}. */
  public String bootstrapServers() {
    return "127.0.0.1:" + port;
  }

  /**
   * Creates a topic with one replica and waits until it exists.
   *
   * @throws IllegalStateException if the broker refuses it or does not answer within 30 s
   */
  public void createTopic(String name, int partitions) {
    try (Admin admin =
        Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers()))) {
      admin
          .createTopics(List.of(new NewTopic(name, partitions, (short) 1)))
          .all()
          .get(30, TimeUnit.SECONDS);
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException("Could not create topic " + name + ": " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted while creating topic " + name, e);
    }
  }

  /** Whether the broker is up (started and not stopped). */
  public synchronized boolean isRunning() {
    return server != null;
  }

  /** Starts the broker again after {@link #stop()}, on the same port and data. No-op if running. */
  public synchronized void restart() {
    if (server != null) {
      return;
    }
    startServer();
    LOG.info("Embedded Kafka restarted on {}", bootstrapServers());
  }

  /**
   * Stops the broker and waits until it is down; its data stays for {@link #restart()}. No-op if
   * stopped.
   */
  public synchronized void stop() {
    KafkaRaftServer s = server;
    server = null;
    if (s != null) {
      s.shutdown();
      s.awaitShutdown();
      LOG.info("Embedded Kafka stopped");
    }
  }

  /** Stops the broker and deletes its log directory. */
  @Override
  public void close() {
    stop();
    Files2.deleteRecursively(logDir);
  }

  @Override
  public String toString() {
    return "EmbeddedKafka[" + bootstrapServers() + (isRunning() ? "" : ", stopped") + "]";
  }

  private synchronized void startServer() {
    KafkaRaftServer s = new KafkaRaftServer(KafkaConfig.fromProps(config, false), Time.SYSTEM);
    s.startup();
    server = s;
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  /** Kafka's server logs its whole configuration at INFO; keep the output readable. */
  private static void quietKafkaLogs() {
    for (String name : List.of("kafka", "org.apache.kafka", "state.change.logger")) {
      if (LoggerFactory.getLogger(name) instanceof ch.qos.logback.classic.Logger logger
          && logger.getLevel() == null) {
        logger.setLevel(ch.qos.logback.classic.Level.WARN);
      }
    }
  }
}

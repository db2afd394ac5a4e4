package dev.pgoutbox.spring.boot;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import kafka.tools.StorageTool;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;
import org.slf4j.LoggerFactory;

/**
 * A single-node Kafka (KRaft, broker and controller in one) running inside the test JVM, for tests
 * on a machine without Docker. Starts in a few seconds. (The same broker as outbox-relay's test
 * tree, kept here so this module depends on no other module's tests.)
 *
 * <pre>{@code
 * try (EmbeddedKafka kafka = EmbeddedKafka.start()) {
 *   kafka.createTopic("order", 8);
 *   ... kafka.bootstrapServers() ...
 * }
 * }</pre>
 */
final class EmbeddedKafka implements AutoCloseable {

  private final Path logDir;
  private final Properties config;
  private final int port;
  private KafkaRaftServer server;

  private EmbeddedKafka(Path logDir, Properties config, int port) {
    this.logDir = logDir;
    this.config = config;
    this.port = port;
  }

  /** Formats a fresh log directory and starts the broker on a free loopback port. */
  public static EmbeddedKafka start() throws IOException {
    quietKafkaLogs();
    Path dir = Files.createTempDirectory("pgoutbox-kafka");
    int port = freePort();
    int controllerPort = freePort();
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
            Map.entry("num.partitions", "4"),
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
            Map.entry("message.max.bytes", "1048588"),
            Map.entry("auto.create.topics.enable", "true")));
    Path file = dir.resolve("server.properties");
    try (OutputStream out = Files.newOutputStream(file)) {
      p.store(out, "pgoutbox test broker");
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
    }
    if (rc != 0) {
      throw new IllegalStateException(
          "formatting the Kafka log dir failed ("
              + rc
              + "): "
              + formatOutput.toString(StandardCharsets.UTF_8));
    }
    EmbeddedKafka kafka = new EmbeddedKafka(dir, p, port);
    kafka.restart();
    return kafka;
  }

  /** {@code host:port} for clients. */
  public String bootstrapServers() {
    return "127.0.0.1:" + port;
  }

  /** Creates a topic with one replica and waits until it exists. */
  public void createTopic(String name, int partitions) throws Exception {
    try (Admin admin =
        Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers()))) {
      admin
          .createTopics(List.of(new NewTopic(name, partitions, (short) 1)))
          .all()
          .get(30, TimeUnit.SECONDS);
    }
  }

  /** Starts the broker (again), on the same port and data. */
  public synchronized void restart() {
    if (server != null) {
      return;
    }
    KafkaRaftServer s = new KafkaRaftServer(KafkaConfig.fromProps(config, false), Time.SYSTEM);
    s.startup();
    server = s;
  }

  /** Stops the broker and waits until it is down; its data stays for {@link #restart()}. */
  public synchronized void stop() {
    KafkaRaftServer s = server;
    server = null;
    if (s != null) {
      s.shutdown();
      s.awaitShutdown();
    }
  }

  @Override
  public void close() throws IOException {
    stop();
    try (Stream<Path> files = Files.walk(logDir)) {
      files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  private static void quietKafkaLogs() {
    for (String name : List.of("kafka", "org.apache.kafka", "state.change.logger")) {
      if (LoggerFactory.getLogger(name) instanceof ch.qos.logback.classic.Logger logger) {
        logger.setLevel(ch.qos.logback.classic.Level.WARN);
      }
    }
  }
}

package dev.pgoutbox.example;

import dev.pgoutbox.example.orders.AppSettings;
import dev.pgoutbox.example.orders.BrokerChoice;
import dev.pgoutbox.example.orders.OrderApplication;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code serve}: runs the order service until SIGTERM or Ctrl-C. */
@Command(
    name = "serve",
    mixinStandardHelpOptions = true,
    description = {
      "Runs the order service: HTTP API, embedded relay, shipping consumer.",
      "Without --jdbc-url it starts an embedded PostgreSQL; without a broker option, an embedded"
          + " Kafka.",
      "Stops gracefully on SIGTERM or Ctrl-C."
    })
final class ServeCommand implements Callable<Integer> {

  @Option(
      names = "--jdbc-url",
      paramLabel = "URL",
      defaultValue = "${env:PGOUTBOX_DB_URL}",
      description =
          "PostgreSQL JDBC URL, e.g. jdbc:postgresql://localhost:5432/shop?user=shop&password=..."
              + " (default: $PGOUTBOX_DB_URL, else an embedded PostgreSQL)")
  @Nullable String jdbcUrl;

  /** Without any: an embedded Kafka. */
  @ArgGroup(exclusive = true, multiplicity = "0..1")
  @Nullable BrokerOptions brokers;

  @Option(
      names = "--port",
      defaultValue = "8080",
      description = "HTTP port, 0 for any free one (default: ${DEFAULT-VALUE})")
  int port;

  @Option(
      names = "--host",
      defaultValue = "127.0.0.1",
      description = "HTTP bind address (default: ${DEFAULT-VALUE})")
  String host = "127.0.0.1";

  @Option(
      names = "--schema",
      defaultValue = "shop",
      description = "Schema of the order tables and the outbox (default: ${DEFAULT-VALUE})")
  String schema = "shop";

  @Option(
      names = "--topic",
      defaultValue = "orders",
      description =
          "Kafka topic, RabbitMQ exchange or NATS subject prefix of the order events (default:"
              + " ${DEFAULT-VALUE})")
  String topic = "orders";

  @Option(
      names = "--postgres-data-dir",
      paramLabel = "DIR",
      description = "Data directory of the embedded PostgreSQL (default: a temp dir)")
  @Nullable Path postgresDataDir;

  @Override
  public Integer call() throws InterruptedException {
    AppSettings settings =
        AppSettings.builder()
            .jdbcUrl(jdbcUrl)
            .postgresDataDir(postgresDataDir)
            .broker(broker())
            .host(host)
            .port(port)
            .schema(schema)
            .topic(topic)
            .build();
    OrderApplication app = OrderApplication.start(settings);
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  app.close();
                  stopped.countDown();
                },
                "shutdown"));
    System.out.println(
        "Order service ready on "
            + app.baseUri()
            + " (try: curl -s "
            + app.baseUri()
            + "/health). Ctrl-C or SIGTERM stops it.");
    stopped.await();
    return 0;
  }

  private BrokerChoice broker() {
    if (brokers == null) {
      return BrokerChoice.embeddedKafka();
    }
    if (brokers.kafka != null) {
      return new BrokerChoice(BrokerChoice.Kind.KAFKA, brokers.kafka);
    }
    if (brokers.rabbitmq != null) {
      return new BrokerChoice(BrokerChoice.Kind.RABBITMQ, brokers.rabbitmq);
    }
    if (brokers.nats != null) {
      return new BrokerChoice(BrokerChoice.Kind.NATS, brokers.nats);
    }
    return BrokerChoice.embeddedKafka();
  }
}

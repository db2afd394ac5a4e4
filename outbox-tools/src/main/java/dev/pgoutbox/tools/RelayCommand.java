package dev.pgoutbox.tools;

import com.rabbitmq.client.ConnectionFactory;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.relay.Completion;
import dev.pgoutbox.relay.DeadLetterPolicy;
import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.kafka.KafkaPublisher;
import dev.pgoutbox.relay.kafka.KafkaRouting;
import dev.pgoutbox.relay.nats.NatsPublisher;
import dev.pgoutbox.relay.nats.NatsRouting;
import dev.pgoutbox.relay.rabbitmq.RabbitMqPublisher;
import dev.pgoutbox.relay.rabbitmq.RabbitMqRouting;
import dev.pgoutbox.relay.wal.WalRelay;
import dev.pgoutbox.testing.Secrets;
import dev.pgoutbox.tools.chaos.PublisherFaults;
import io.nats.client.Options;
import java.sql.SQLException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTransientConnectionException;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code relay}: a relay process on its own, for an outbox that other processes write to. The chaos
 * run starts several of these and kills them.
 */
@Command(
    name = "relay",
    mixinStandardHelpOptions = true,
    description = {
      "Runs one pgoutbox relay: publishes the events of an outbox to a broker until SIGTERM.",
      "The broker's topology (Kafka topic, RabbitMQ exchange, JetStream stream) must exist or be"
          + " created on first use; this command declares nothing.",
      "Prints 'relay <name> started' on stdout once it runs."
    })
final class RelayCommand implements Callable<Integer> {

  @Option(
      names = "--jdbc-url",
      required = true,
      paramLabel = "URL",
      description = "PostgreSQL JDBC URL of the database holding the outbox")
  String jdbcUrl;

  @ArgGroup(exclusive = true, multiplicity = "1")
  BrokerOptions broker;

  @Option(
      names = "--topic",
      paramLabel = "NAME",
      defaultValue = "outbox",
      description =
          "Kafka topic, RabbitMQ exchange (routing key = event type) or NATS subject prefix"
              + " (<prefix>.<aggregate_type>.<event_type>) (default: ${DEFAULT-VALUE})")
  String topic = "outbox";

  @Option(
      names = "--schema",
      paramLabel = "NAME",
      defaultValue = "public",
      description = "Schema of the outbox table (default: ${DEFAULT-VALUE})")
  String schema = "public";

  @Option(
      names = "--source",
      paramLabel = "SOURCE",
      defaultValue = "table",
      description =
          "table: an OutboxRelay claiming from the table; wal: a WalRelay reading the outbox's"
              + " logical replication slot (pgoutbox_<schema>, created with its publication if"
              + " missing; needs wal_level=logical and a role with REPLICATION), one instance"
              + " reading and the others standing by (default: ${DEFAULT-VALUE})")
  String source = "table";

  @Option(
      names = "--transport",
      paramLabel = "TRANSPORT",
      defaultValue = "rows",
      description =
          "With --source wal: rows (inserted rows only) or messages (also the message transport's"
              + " logical decoding messages; see docs/wal-messages.md) (default: ${DEFAULT-VALUE})")
  String transport = "rows";

  @Option(
      names = "--name",
      paramLabel = "NAME",
      description = "Relay name in logs and metrics (default: relay-<pid>)")
  @Nullable String name;

  @Option(
      names = "--batch-size",
      paramLabel = "N",
      description =
          "Events claimed per batch (default: 200; with --source wal the WAL relay's own, 2000)")
  @Nullable Integer batchSize;

  @Option(
      names = "--completion",
      paramLabel = "MODE",
      description =
          "mark (keep delivered rows, processed_at set) or delete (remove them); default: the"
              + " relay's own (mark for the table relay, delete for the WAL relay)")
  @Nullable String completion;

  @Option(
      names = "--publish-timeout",
      paramLabel = "S",
      defaultValue = "30",
      description =
          "Seconds to wait for a batch's publish results; PostgreSQL ends a claim transaction"
              + " idle for this + 10 s (default: ${DEFAULT-VALUE})")
  int publishTimeoutSeconds = 30;

  @Option(
      names = "--dead-letter-policy",
      paramLabel = "POLICY",
      defaultValue = "hold",
      description =
          "hold (a dead event holds back its aggregate) or release (the aggregate goes on without"
              + " it); every relay of one outbox must use the same (default: ${DEFAULT-VALUE})")
  String deadLetterPolicy = "hold";

  @Option(
      names = "--max-retry-hint",
      paramLabel = "S",
      defaultValue = "600",
      description =
          "Seconds a broker's Retry-After hint may delay an event at most; longer hints are cut"
              + " to it (default: ${DEFAULT-VALUE})")
  int maxRetryHintSeconds = 600;

  @Option(
      names = "--chaos-publisher-faults",
      paramLabel = "SEED",
      hidden = true,
      description = "For the chaos run: inject publisher-side faults, seeded")
  @Nullable Long chaosPublisherFaults;

  @Option(
      names = "--chaos-slow-batch-every",
      paramLabel = "S",
      hidden = true,
      defaultValue = "20",
      description = "For the chaos run: seconds between slow batches (0: none)")
  int chaosSlowBatchEvery = 20;

  @Option(
      names = "--chaos-slow-batches-until",
      paramLabel = "EPOCH_MS",
      hidden = true,
      defaultValue = "0",
      description = "For the chaos run: no slow batches after this wall-clock time (0: always)")
  long chaosSlowBatchesUntil;

  @Override
  public Integer call() throws InterruptedException {
    String relayName = name != null ? name : "relay-" + ProcessHandle.current().pid();
    RelayConfig.Builder settings = RelayConfig.builder();
    if (batchSize != null) {
      settings.batchSize(batchSize);
    }
    if (completion != null) {
      settings.completion(completion());
    }
    RelayConfig config =
        settings
            .publishTimeout(Duration.ofSeconds(publishTimeoutSeconds))
            .deadLetterPolicy(policy())
            .maxRetryHint(Duration.ofSeconds(maxRetryHintSeconds))
            .build();
    HikariConfig pool = new HikariConfig();
    pool.setJdbcUrl(jdbcUrl);
    pool.setPoolName(relayName);
    // Names the relay's sessions in pg_stat_activity.
    pool.addDataSourceProperty("ApplicationName", relayName);
    boolean wal = isWal();
    // The WAL relay's reader, completer, drainer and stats refresh each borrow a connection.
    pool.setMaximumPoolSize(wal ? 4 : 2);
    // A database that went away must be noticed quickly: the relay backs off and retries.
    pool.setConnectionTimeout(5_000);
    pool.setInitializationFailTimeout(-1);
    HikariDataSource dataSource = new HikariDataSource(pool);
    Publisher publisher =
        chaosPublisherFaults == null
            ? publisher()
            : PublisherFaults.wrap(
                publisher(),
                chaosPublisherFaults,
                relayName,
                Duration.ofSeconds(chaosSlowBatchEvery),
                chaosSlowBatchesUntil);
    Runnable start;
    Consumer<Duration> stop;
    if (wal) {
      WalRelay relay =
          WalRelay.builder()
              .name(relayName)
              .dataSource(dataSource)
              .schema(schema)
              .transport(
                  transport.equals("messages")
                      ? dev.pgoutbox.core.OutboxTransport.MESSAGES
                      : dev.pgoutbox.core.OutboxTransport.ROWS)
              .publisher(publisher)
              .config(config)
              .build();
      start = relay::start;
      stop = relay::stop;
    } else {
      OutboxRelay relay =
          OutboxRelay.builder()
              .name(relayName)
              .dataSource(dataSource)
              .schema(schema)
              .publisher(publisher)
              .config(config)
              .build();
      start = relay::start;
      stop = relay::stop;
    }
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  stop.accept(Duration.ofSeconds(10));
                  publisher.close();
                  dataSource.close();
                  stopped.countDown();
                },
                "relay-shutdown"));
    startWhenTheDatabaseAnswers(start, relayName);
    System.out.println(
        "relay "
            + relayName
            + " started ("
            + source
            + "): "
            + Secrets.mask(jdbcUrl)
            + " -> "
            + destination());
    System.out.flush();
    stopped.await();
    return 0;
  }

  /**
   * Starts the relay, trying again every second while the start fails for want of the database (a
   * WAL relay prepares its slot at start; the chaos run restarts relays while PostgreSQL is down):
   * a relay process never gives up. Anything else (a setting, a grant) fails the command.
   */
  private static void startWhenTheDatabaseAnswers(Runnable start, String relayName)
      throws InterruptedException {
    while (true) {
      try {
        start.run();
        return;
      } catch (RuntimeException e) {
        if (!databaseUnavailable(e)) {
          throw e;
        }
        System.err.println(
            "relay "
                + relayName
                + " could not start ("
                + e.getMessage()
                + "); trying again in 1 s");
        TimeUnit.SECONDS.sleep(1);
      }
    }
  }

  /**
   * Whether a failure anywhere down its causes is the database being out of reach: no connection
   * (SQLState class 08, or the pool giving up waiting for one), or a server shutting down, crashed
   * or still recovering (57P). The relay's own wrapping differs by where the start failed
   * (registering, preparing the slot), so the whole chain is searched.
   */
  static boolean databaseUnavailable(Throwable failure) {
    for (Throwable t = failure; t != null; t = t.getCause()) {
      if (t instanceof SQLTransientConnectionException || t instanceof SQLRecoverableException) {
        return true;
      }
      if (t instanceof SQLException sql && sql.getSQLState() != null) {
        String state = sql.getSQLState();
        if (state.startsWith("08") || state.startsWith("57P")) {
          return true;
        }
      }
    }
    return false;
  }

  private boolean isWal() {
    return switch (source) {
      case "table" -> false;
      case "wal" -> true;
      default ->
          throw new IllegalArgumentException("--source must be table or wal, was '" + source + "'");
    };
  }

  private Completion completion() {
    return switch (String.valueOf(completion)) {
      case "mark" -> Completion.MARK_PROCESSED;
      case "delete" -> Completion.DELETE;
      default ->
          throw new IllegalArgumentException(
              "--completion must be mark or delete, was '" + completion + "'");
    };
  }

  private DeadLetterPolicy policy() {
    return switch (deadLetterPolicy) {
      case "hold" -> DeadLetterPolicy.HOLD_AGGREGATE;
      case "release" -> DeadLetterPolicy.RELEASE_AGGREGATE;
      default ->
          throw new IllegalArgumentException(
              "--dead-letter-policy must be hold or release, was '" + deadLetterPolicy + "'");
    };
  }

  private Publisher publisher() {
    if (broker.kafka != null) {
      return KafkaPublisher.builder(broker.kafka).routing(KafkaRouting.fixed(topic)).build();
    }
    if (broker.rabbitmq != null) {
      ConnectionFactory factory = new ConnectionFactory();
      try {
        factory.setUri(broker.rabbitmq);
      } catch (Exception e) {
        throw new IllegalArgumentException(
            "--rabbitmq is not an AMQP URI: " + Secrets.mask(broker.rabbitmq), e);
      }
      return RabbitMqPublisher.builder(factory, RabbitMqRouting.byEventType(topic)).build();
    }
    Options options = new Options.Builder().server(broker.nats).maxReconnects(-1).build();
    return NatsPublisher.builder(options).routing(NatsRouting.byTypes(topic)).build();
  }

  private String destination() {
    if (broker.kafka != null) {
      return "Kafka " + broker.kafka + " topic " + topic;
    }
    if (broker.rabbitmq != null) {
      return "RabbitMQ " + Secrets.mask(broker.rabbitmq) + " exchange " + topic;
    }
    return "NATS " + Secrets.mask(broker.nats) + " subjects " + topic + ".>";
  }
}

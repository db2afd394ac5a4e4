package dev.pgoutbox.example.orders;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.admin.OutboxAdmin;
import dev.pgoutbox.core.Inbox;
import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.micrometer.MicrometerRelayMetrics;
import dev.pgoutbox.testing.EmbeddedKafka;
import dev.pgoutbox.testing.EmbeddedPostgresServer;
import dev.pgoutbox.testing.Secrets;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The whole order service in one process: database (given or embedded), schema migrations, the
 * order service and its HTTP API, the relay on virtual threads, the broker link (given or an
 * embedded Kafka) and the shipping consumer.
 *
 * <pre>{@code
 * try (OrderApplication app = OrderApplication.start(AppSettings.builder().port(0).build())) {
 *   System.out.println("Listening on " + app.baseUri());
 * }
 * }</pre>
 *
 * <p>{@link #close()} shuts down in order: stop taking HTTP requests, let the relay finish its
 * batch, stop the consumer, close the broker link and the pool, stop the embedded engines.
 * Thread-safe.
 */
public final class OrderApplication implements AutoCloseable {

  /** The relay's name in logs and metric tags. */
  public static final String RELAY_NAME = "orders";

  /** Flyway location of the example's own migrations. */
  public static final String MIGRATION_LOCATION = "classpath:db/example/migration";

  /** Flyway history table of the example's own migrations. */
  public static final String HISTORY_TABLE = "example_schema_history";

  /** Published events older than this are purged (hourly). */
  public static final Duration RETENTION = Duration.ofDays(7);

  /**
   * Inbox rows older than this are purged (hourly): well above any redelivery delay, so a late
   * redelivery is still recognised.
   */
  public static final Duration INBOX_RETENTION = Duration.ofDays(14);

  private static final Logger LOG = LoggerFactory.getLogger(OrderApplication.class);

  private final AppSettings settings;
  private final Deque<AutoCloseable> resources = new ArrayDeque<>();
  private @Nullable EmbeddedPostgresServer embeddedPostgres;
  private @Nullable EmbeddedKafka embeddedKafka;
  private HikariDataSource dataSource;
  private PrometheusMeterRegistry registry;
  private BrokerLink broker;
  private OutboxRelay relay;
  private OutboxAdmin admin;
  private OrderService orders;
  private ShippingService shipping;
  private HttpApi http;
  private boolean closed;

  private OrderApplication(AppSettings settings) {
    this.settings = settings;
  }

  /**
   * Starts everything; on failure, closes what was started and rethrows.
   *
   * @throws RuntimeException naming what could not start
   */
  public static OrderApplication start(AppSettings settings) {
    requireNonNull(settings, "settings");
    OrderApplication app = new OrderApplication(settings);
    try {
      app.startAll();
      return app;
    } catch (RuntimeException | Error e) {
      app.close();
      throw e;
    }
  }

  private void startAll() {
    long started = System.nanoTime();
    // The two engines start in parallel: each takes a few seconds.
    CompletableFuture<@Nullable EmbeddedKafka> kafka = new CompletableFuture<>();
    if (settings.broker().kind() == BrokerChoice.Kind.EMBEDDED_KAFKA) {
      Thread.ofVirtual()
          .name("embedded-kafka-start")
          .start(
              () -> {
                try {
                  kafka.complete(EmbeddedKafka.start());
                } catch (RuntimeException | Error e) {
                  kafka.completeExceptionally(e);
                }
              });
    } else {
      kafka.complete(null);
    }
    String jdbcUrl = settings.jdbcUrl();
    try {
      if (jdbcUrl == null) {
        embeddedPostgres =
            settings.postgresDataDir() == null
                ? EmbeddedPostgresServer.start()
                : EmbeddedPostgresServer.start(settings.postgresDataDir());
        jdbcUrl = embeddedPostgres.jdbcUrl();
      }
    } finally {
      try {
        embeddedKafka = kafka.join();
      } catch (CompletionException e) {
        throw e.getCause() instanceof RuntimeException cause ? cause : e;
      }
    }

    HikariConfig pool = new HikariConfig();
    pool.setJdbcUrl(jdbcUrl);
    pool.setPoolName("orders");
    pool.setMaximumPoolSize(settings.poolSize());
    pool.setConnectionTimeout(10_000);
    dataSource = new HikariDataSource(pool);
    resources.push(dataSource);

    String schema = settings.schema();
    migrate(dataSource, schema);

    registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    new JvmMemoryMetrics().bindTo(registry);
    new JvmThreadMetrics().bindTo(registry);
    new ProcessorMetrics().bindTo(registry);
    new UptimeMetrics().bindTo(registry);
    resources.push(registry::close);

    ObjectMapper json = Outbox.defaultObjectMapper();
    Outbox outbox = Outbox.builder().schema(schema).objectMapper(json).build();
    Inbox inbox = Inbox.builder().schema(schema).build();
    orders = new OrderService(dataSource, schema, outbox, registry);
    shipping = new ShippingService(dataSource, schema, inbox, json, registry);
    admin = OutboxAdmin.builder().dataSource(dataSource).schema(schema).build();

    broker = connect();
    resources.push(broker);
    AutoCloseable consumer = broker.startConsumer(shipping);
    resources.push(consumer);

    ScheduledExecutorService relayExecutor =
        Executors.newScheduledThreadPool(2, Thread.ofVirtual().name("relay-", 0).factory());
    resources.push(
        () -> {
          relayExecutor.shutdownNow();
          relayExecutor.awaitTermination(5, TimeUnit.SECONDS);
        });
    relay =
        OutboxRelay.builder()
            .name(RELAY_NAME)
            .dataSource(dataSource)
            .schema(schema)
            .publisher(broker.publisher())
            .executor(relayExecutor)
            .config(settings.relayConfig())
            .listener(new MicrometerRelayMetrics(registry, RELAY_NAME))
            .build();
    relay.start();
    resources.push(() -> relay.stop(Duration.ofSeconds(10)));

    // Queue hygiene: published events older than a week and inbox rows older than two weeks go,
    // in small batches, every hour.
    ScheduledFuture<?> outboxRetention =
        admin.scheduleRetention(relayExecutor, Duration.ofHours(1), RETENTION, 1_000);
    ScheduledFuture<?> inboxRetention =
        inbox.scheduleRetention(
            relayExecutor, dataSource, Duration.ofHours(1), INBOX_RETENTION, 1_000);
    resources.push(
        () -> {
          outboxRetention.cancel(false);
          inboxRetention.cancel(false);
        });

    http = HttpApi.start(settings.host(), settings.port(), this);
    resources.push(http);
    LOG.info(
        "Order service listening on {} ({}; database {}; schema {}), started in {} ms",
        http.baseUri(),
        broker.describe(),
        embeddedPostgres != null ? "embedded PostgreSQL" : redact(jdbcUrl),
        schema,
        Duration.ofNanos(System.nanoTime() - started).toMillis());
  }

  /**
   * Applies the pgoutbox migrations and the example's own (orders, order_items, shipments,
   * shipping_progress) to {@code schema}, each with its own Flyway history table. Idempotent.
   */
  public static void migrate(DataSource dataSource, String schema) {
    int outboxMigrations = OutboxSchema.migrate(dataSource, schema);
    int appMigrations =
        Flyway.configure()
            .dataSource(dataSource)
            .locations(MIGRATION_LOCATION)
            .schemas(schema)
            .defaultSchema(schema)
            .createSchemas(true)
            .table(HISTORY_TABLE)
            // The schema already holds the outbox tables: start this history at 0 so V1 runs.
            .baselineOnMigrate(true)
            .baselineVersion("0")
            .load()
            .migrate()
            .migrationsExecuted;
    LOG.info(
        "Schema {} ready ({} pgoutbox and {} example migrations applied)",
        schema,
        outboxMigrations,
        appMigrations);
  }

  private BrokerLink connect() {
    BrokerChoice choice = settings.broker();
    Duration timeout = settings.deliveryTimeout();
    return switch (choice.kind()) {
      case EMBEDDED_KAFKA ->
          new KafkaLink(
              requireNonNull(embeddedKafka).bootstrapServers(), settings.topic(), timeout);
      case KAFKA -> new KafkaLink(choice.address(), settings.topic(), timeout);
      case RABBITMQ -> new RabbitMqLink(choice.address(), settings.topic(), timeout);
      case NATS -> new NatsLink(choice.address(), settings.topic(), timeout);
    };
  }

  /** The HTTP server's address, e.g. {@code http://127.0.0.1:8080}. */
  public URI baseUri() {
    return http.baseUri();
  }

  /** The settings this application runs with. */
  public AppSettings settings() {
    return settings;
  }

  /** The service's connection pool. */
  public HikariDataSource dataSource() {
    return dataSource;
  }

  /** The metrics registry behind {@code GET /metrics}. */
  public PrometheusMeterRegistry registry() {
    return registry;
  }

  /** The order service. */
  public OrderService orders() {
    return orders;
  }

  /** The shipping consumer's service. */
  public ShippingService shipping() {
    return shipping;
  }

  /** The embedded relay. */
  public OutboxRelay relay() {
    return relay;
  }

  /** Admin operations on the outbox. */
  public OutboxAdmin admin() {
    return admin;
  }

  /** The broker link. */
  public BrokerLink broker() {
    return broker;
  }

  /** The embedded Kafka, when no broker was given. */
  public @Nullable EmbeddedKafka embeddedKafka() {
    return embeddedKafka;
  }

  /** Whether the database answers now. */
  BrokerLink.Health databaseHealth() {
    try (var connection = dataSource.getConnection()) {
      boolean valid = connection.isValid(2);
      return new BrokerLink.Health(valid, valid ? "PostgreSQL answers" : "connection not valid");
    } catch (java.sql.SQLException | RuntimeException e) {
      return new BrokerLink.Health(false, e.getMessage() == null ? e.toString() : e.getMessage());
    }
  }

  /** Shuts everything down in reverse order of start. Idempotent. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    LOG.info("Shutting down the order service");
    while (!resources.isEmpty()) {
      AutoCloseable resource = resources.pop();
      try {
        resource.close();
      } catch (Exception e) {
        if (e instanceof InterruptedException) {
          Thread.currentThread().interrupt();
        }
        LOG.warn("Shutdown step failed: {}", e.toString());
      }
    }
    if (embeddedKafka != null) {
      embeddedKafka.close();
    }
    if (embeddedPostgres != null) {
      embeddedPostgres.close();
    }
    LOG.info("Order service stopped");
  }

  private static String redact(String jdbcUrl) {
    return Secrets.mask(jdbcUrl);
  }
}

package dev.pgoutbox.example.orders;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.testing.Secrets;
import java.nio.file.Path;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * Settings of an {@link OrderApplication}; immutable, built with {@link #builder()}.
 *
 * <pre>{@code
 * AppSettings settings = AppSettings.builder()
 *     .jdbcUrl("jdbc:postgresql://localhost:5432/shop?user=shop")   // else an embedded PostgreSQL
 *     .broker(new BrokerChoice(BrokerChoice.Kind.KAFKA, "localhost:9092"))
 *     .port(8080)
 *     .build();
 * }</pre>
 *
 * @param jdbcUrl the database, or null for an embedded PostgreSQL
 * @param postgresDataDir where the embedded PostgreSQL keeps its data, or null for a temp dir
 * @param broker where events go
 * @param host the HTTP server's bind address
 * @param port the HTTP port, 0 for any free one
 * @param schema the schema of the example's tables and of the outbox
 * @param topic the Kafka topic, RabbitMQ exchange or NATS subject prefix of the order events
 * @param relayConfig the relay's settings
 * @param deliveryTimeout how long a broker may take to acknowledge one event
 * @param poolSize connections of the service's pool
 */
public record AppSettings(
    @Nullable String jdbcUrl,
    @Nullable Path postgresDataDir,
    BrokerChoice broker,
    String host,
    int port,
    String schema,
    String topic,
    RelayConfig relayConfig,
    Duration deliveryTimeout,
    int poolSize) {

  /** Checks the components. */
  public AppSettings {
    requireNonNull(broker, "broker");
    requireNonNull(host, "host");
    OutboxSchema.requireValidName(schema);
    requireNonNull(topic, "topic");
    if (!topic.matches("[A-Za-z0-9][A-Za-z0-9._-]{0,100}")) {
      throw new IllegalArgumentException(
          "topic must be letters, digits, '.', '_' or '-' (at most 101), was '" + topic + "'");
    }
    if (port < 0 || port > 65_535) {
      throw new IllegalArgumentException("port must be between 0 and 65535, was " + port);
    }
    requireNonNull(relayConfig, "relayConfig");
    requireNonNull(deliveryTimeout, "deliveryTimeout");
    if (poolSize < 2 || poolSize > 200) {
      throw new IllegalArgumentException("poolSize must be between 2 and 200, was " + poolSize);
    }
  }

  /** Every component, with any password in the JDBC URL or the broker's address masked. */
  @Override
  public String toString() {
    return "AppSettings[jdbcUrl="
        + Secrets.mask(jdbcUrl)
        + ", postgresDataDir="
        + postgresDataDir
        + ", broker="
        + broker
        + ", host="
        + host
        + ", port="
        + port
        + ", schema="
        + schema
        + ", topic="
        + topic
        + ", relayConfig="
        + relayConfig
        + ", deliveryTimeout="
        + deliveryTimeout
        + ", poolSize="
        + poolSize
        + "]";
  }

  /** A builder starting from the defaults: embedded engines, port 8080, schema {@code shop}. */
  public static Builder builder() {
    return new Builder();
  }

  /** Builder of {@link AppSettings}; not thread-safe. */
  public static final class Builder {
    private @Nullable String jdbcUrl;
    private @Nullable Path postgresDataDir;
    private BrokerChoice broker = BrokerChoice.embeddedKafka();
    private String host = "127.0.0.1";
    private int port = 8080;
    private String schema = "shop";
    private String topic = "orders";
    private RelayConfig relayConfig = RelayConfig.ofDefaults();
    private Duration deliveryTimeout = Duration.ofSeconds(30);
    private int poolSize = 10;

    private Builder() {}

    /** The database; null (the default) starts an embedded PostgreSQL. */
    public Builder jdbcUrl(@Nullable String jdbcUrl) {
      this.jdbcUrl = jdbcUrl == null || jdbcUrl.isBlank() ? null : jdbcUrl;
      return this;
    }

    /** Data directory of the embedded PostgreSQL (default: a temp dir, deleted at close). */
    public Builder postgresDataDir(@Nullable Path dir) {
      this.postgresDataDir = dir;
      return this;
    }

    /** The broker (default: an embedded Kafka). */
    public Builder broker(BrokerChoice broker) {
      this.broker = broker;
      return this;
    }

    /** Bind address of the HTTP server (default 127.0.0.1). */
    public Builder host(String host) {
      this.host = host;
      return this;
    }

    /** HTTP port, 0 for a free one (default 8080). */
    public Builder port(int port) {
      this.port = port;
      return this;
    }

    /** Schema of the tables (default {@code shop}). */
    public Builder schema(String schema) {
      this.schema = schema;
      return this;
    }

    /** Topic, exchange or subject prefix (default {@code orders}). */
    public Builder topic(String topic) {
      this.topic = topic;
      return this;
    }

    /** The relay's settings (default {@link RelayConfig#ofDefaults()}). */
    public Builder relayConfig(RelayConfig relayConfig) {
      this.relayConfig = relayConfig;
      return this;
    }

    /** Broker acknowledgement timeout per event (default 30 s). */
    public Builder deliveryTimeout(Duration deliveryTimeout) {
      this.deliveryTimeout = deliveryTimeout;
      return this;
    }

    /** Connections of the pool (default 10). */
    public Builder poolSize(int poolSize) {
      this.poolSize = poolSize;
      return this;
    }

    /** The settings; each was checked. */
    public AppSettings build() {
      return new AppSettings(
          jdbcUrl,
          postgresDataDir,
          broker,
          host,
          port,
          schema,
          topic,
          relayConfig,
          deliveryTimeout,
          poolSize);
    }
  }
}

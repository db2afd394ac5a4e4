package dev.pgoutbox.spring.boot;

import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.Completion;
import dev.pgoutbox.relay.DeadLetterPolicy;
import dev.pgoutbox.relay.Ordering;
import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.kafka.KafkaRouting;
import dev.pgoutbox.relay.nats.NatsRouting;
import dev.pgoutbox.relay.webhook.WebhookPublisher;
import dev.pgoutbox.relay.webhook.WebhookRouting;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code pgoutbox.*} properties. Every setter checks its value with the same rule as the
 * library's builders, so a bad value fails start-up with a message naming the property and its
 * bound (Boot adds the property name, the library the bound).
 *
 * <p>Defaults are the library's (a test checks they agree with {@link RelayConfig#ofDefaults()}),
 * written as literals so that the generated metadata shows them; docs/spring-boot-properties.md
 * lists them.
 */
@ConfigurationProperties("pgoutbox")
public class PgOutboxProperties {

  /** Schema that holds the outbox tables: a plain lower-case identifier. */
  private String schema = "public";

  /**
   * Whether to apply the pgoutbox migrations (OutboxSchema.migrate) at start-up, after the
   * application's own Flyway or Liquibase. When false, the application migrates: add
   * classpath:db/pgoutbox/migration to spring.flyway.locations, or run the SQL files.
   */
  private boolean migrate = true;

  private final Writer writer = new Writer();
  private final Relay relay = new Relay();
  private final Publisher publisher = new Publisher();
  private final Health health = new Health();
  private final Actuator actuator = new Actuator();
  private final Console console = new Console();

  /** The schema. */
  public String getSchema() {
    return schema;
  }

  /** Sets the schema; refuses names that are not plain lower-case identifiers. */
  public void setSchema(String schema) {
    this.schema = OutboxSchema.requireValidName(schema);
  }

  /** Whether to migrate at start-up. */
  public boolean isMigrate() {
    return migrate;
  }

  /** Sets whether to migrate at start-up. */
  public void setMigrate(boolean migrate) {
    this.migrate = migrate;
  }

  /** {@code pgoutbox.writer.*}. */
  public Writer getWriter() {
    return writer;
  }

  /** {@code pgoutbox.relay.*}. */
  public Relay getRelay() {
    return relay;
  }

  /** {@code pgoutbox.publisher.*}. */
  public Publisher getPublisher() {
    return publisher;
  }

  /** {@code pgoutbox.health.*}. */
  public Health getHealth() {
    return health;
  }

  /** {@code pgoutbox.actuator.*}. */
  public Actuator getActuator() {
    return actuator;
  }

  /** The web console's settings. */
  public Console getConsole() {
    return console;
  }

  /**
   * {@code pgoutbox.console.*}: the web console ({@code dev.pgoutbox.console.OutboxConsole}),
   * served by a servlet web application when {@code pgoutbox-console} is on the classpath.
   */
  public static class Console {

    /** Default of {@code pgoutbox.console.path}: {@value}. */
    public static final String DEFAULT_PATH = "/pgoutbox";

    /** Default of {@code pgoutbox.console.write-role}: {@value}. */
    public static final String DEFAULT_WRITE_ROLE = "OUTBOX_ADMIN";

    /**
     * Whether the console is served. Off by default: it shows aggregate ids and error texts to
     * whoever reaches its path; guard the path (Spring Security) before turning it on.
     */
    private boolean enabled;

    /** Where the console is served: a path of one or more segments, without a trailing slash. */
    private String path = DEFAULT_PATH;

    /**
     * Whether retry and discard run. When false the console is read-only and refuses them with 403.
     */
    private boolean writesEnabled;

    /** Whether events are shown with their payloads. When false payloads are left out. */
    private boolean showPayloads;

    /**
     * The role a caller needs to write (Spring Security's {@code hasRole}, without the {@code
     * ROLE_} prefix), when Spring Security is on the classpath.
     */
    private String writeRole = DEFAULT_WRITE_ROLE;

    /** Whether the console is served. */
    public boolean isEnabled() {
      return enabled;
    }

    /** Sets whether the console is served. */
    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    /** The console's path. */
    public String getPath() {
      return path;
    }

    /**
     * Sets the console's path.
     *
     * @throws IllegalArgumentException unless it starts with a slash, does not end with one, and
     *     holds only letters, digits, {@code -}, {@code _}, {@code .} and slashes
     */
    public void setPath(String path) {
      if (path == null
          || !path.matches("(/[A-Za-z0-9._-]+)+")
          || path.contains("/./")
          || path.contains("/../")
          || path.endsWith("/.")
          || path.endsWith("/..")) {
        throw new IllegalArgumentException(
            "pgoutbox.console.path must be a path like /pgoutbox (segments of letters, digits, -,"
                + " _ and ., no trailing slash), was '"
                + path
                + "'");
      }
      this.path = path;
    }

    /** Whether writes are enabled. */
    public boolean isWritesEnabled() {
      return writesEnabled;
    }

    /** Sets whether writes are enabled. */
    public void setWritesEnabled(boolean writesEnabled) {
      this.writesEnabled = writesEnabled;
    }

    /** Whether payloads are shown. */
    public boolean isShowPayloads() {
      return showPayloads;
    }

    /** Sets whether payloads are shown. */
    public void setShowPayloads(boolean showPayloads) {
      this.showPayloads = showPayloads;
    }

    /** The role writes need. */
    public String getWriteRole() {
      return writeRole;
    }

    /**
     * Sets the role writes need.
     *
     * @throws IllegalArgumentException if blank or given with the {@code ROLE_} prefix
     */
    public void setWriteRole(String writeRole) {
      if (writeRole == null || writeRole.isBlank() || writeRole.startsWith("ROLE_")) {
        throw new IllegalArgumentException(
            "pgoutbox.console.write-role must be a role name without the ROLE_ prefix"
                + " (OUTBOX_ADMIN), was '"
                + writeRole
                + "'");
      }
      this.writeRole = writeRole;
    }
  }

  /**
   * {@code pgoutbox.actuator.*}: what the {@code outbox} Actuator endpoint lets its callers do and
   * see. Both default to false: a read-only endpoint that lists dead letters without their
   * payloads.
   */
  public static class Actuator {

    /**
     * Whether the outbox endpoint's write operations (retry and discard of dead letters) run. When
     * false they are refused with 403 and write nothing. Guard them (Spring Security) before
     * turning this on.
     */
    private boolean writesEnabled;

    /**
     * Whether the outbox endpoint's dead-letter list includes each event's payload. When false the
     * payload is left out.
     */
    private boolean showPayloads;

    /** Whether writes are enabled. */
    public boolean isWritesEnabled() {
      return writesEnabled;
    }

    /** Sets whether writes are enabled. */
    public void setWritesEnabled(boolean writesEnabled) {
      this.writesEnabled = writesEnabled;
    }

    /** Whether payloads are shown. */
    public boolean isShowPayloads() {
      return showPayloads;
    }

    /** Sets whether payloads are shown. */
    public void setShowPayloads(boolean showPayloads) {
      this.showPayloads = showPayloads;
    }
  }

  /** {@code pgoutbox.writer.*}: how events are appended. */
  public static class Writer {

    /**
     * Whether append takes a transaction-level advisory lock per aggregate, so that position order
     * is commit order and the relay's per-aggregate order holds whoever writes.
     */
    private boolean serializeWritersPerAggregate = true;

    /** Whether writers serialize per aggregate. */
    public boolean isSerializeWritersPerAggregate() {
      return serializeWritersPerAggregate;
    }

    /** Sets whether writers serialize per aggregate. */
    public void setSerializeWritersPerAggregate(boolean serialize) {
      this.serializeWritersPerAggregate = serialize;
    }

    /** Most bytes of an event's payload, as JSON text in UTF-8 (1 to 267386880). */
    private int maxPayloadBytes = Outbox.DEFAULT_MAX_PAYLOAD_BYTES;

    /** Most headers of an event, as stored (0 to 10000). */
    private int maxHeaders = Outbox.DEFAULT_MAX_HEADERS;

    /** Most bytes of an event's header keys and values together, in UTF-8 (0 to 16777216). */
    private int maxHeaderBytes = Outbox.DEFAULT_MAX_HEADER_BYTES;

    /** Most payload bytes. */
    public int getMaxPayloadBytes() {
      return maxPayloadBytes;
    }

    /** Sets the most payload bytes. */
    public void setMaxPayloadBytes(int bytes) {
      Outbox.builder().maxPayloadBytes(bytes);
      this.maxPayloadBytes = bytes;
    }

    /** Most headers. */
    public int getMaxHeaders() {
      return maxHeaders;
    }

    /** Sets the most headers. */
    public void setMaxHeaders(int count) {
      Outbox.builder().maxHeaders(count);
      this.maxHeaders = count;
    }

    /** Most header bytes. */
    public int getMaxHeaderBytes() {
      return maxHeaderBytes;
    }

    /** Sets the most header bytes. */
    public void setMaxHeaderBytes(int bytes) {
      Outbox.builder().maxHeaderBytes(bytes);
      this.maxHeaderBytes = bytes;
    }
  }

  /** {@code pgoutbox.relay.*}: the relay embedded in this application. */
  public static class Relay {

    /** Whether this application runs a relay (false: it only appends events). */
    private boolean enabled = true;

    /** The relay's name in log lines, metric tags and application_name. */
    private String name = "default";

    /** Most events claimed, published and marked in one transaction (1 to 10000). */
    private int batchSize = 200;

    /**
     * Most bytes of payloads and headers one batch claims (1024 to 1073741824); a larger event goes
     * out alone.
     */
    private int maxBatchBytes = RelayConfig.DEFAULT_MAX_BATCH_BYTES;

    /** Fallback poll interval (1ms to 1h). */
    private Duration pollInterval = Duration.ofSeconds(1);

    /** Whether to LISTEN for the outbox trigger's notifications (false: poll only). */
    private boolean listenForNotifications = true;

    /** Failed attempts after which an event is dead-lettered (1 to 1000). */
    private int maxAttempts = 10;

    /** Longest delay a publisher's retry hint can impose (1ms to 7d). */
    private Duration maxRetryHint = Duration.ofMinutes(10);

    /** Longest wait for a batch's publish results (1ms to 1h). */
    private Duration publishTimeout = Duration.ofSeconds(30);

    /** Strict per-aggregate order, or unordered. */
    private Ordering ordering = Ordering.STRICT;

    /** Whether a dead event holds back the later events of its aggregate. */
    private DeadLetterPolicy deadLetterPolicy = DeadLetterPolicy.HOLD_AGGREGATE;

    /** Mark published rows processed, or delete them. */
    private Completion completion = Completion.MARK_PROCESSED;

    /** Longest stored last_error, in characters (64 to 100000). */
    private int lastErrorMaxLength = 2000;

    /** Cap of the relay's own backoff after database errors (100ms to 1h). */
    private Duration errorBackoffMax = Duration.ofSeconds(30);

    /** How often the database-backed gauges (pending, dead letters, lag) refresh (100ms to 1h). */
    private Duration metricsRefreshInterval = Duration.ofSeconds(10);

    /** Whether the relay's transactions wait for their WAL to reach disk. */
    private boolean synchronousCommit;

    /** How long shutdown waits for the batch in flight before rolling it back. */
    private Duration shutdownTimeout = Duration.ofSeconds(30);

    /** Threads of the relay's scheduled executor (virtual when spring.threads.virtual.enabled). */
    private int executorThreads = 2;

    private final Backoff backoff = new Backoff();

    private final Tracing tracing = new Tracing();

    /** Builds the relay settings these properties describe. */
    public RelayConfig toRelayConfig() {
      RelayConfig.Builder builder =
          RelayConfig.builder()
              .batchSize(batchSize)
              .maxBatchBytes(maxBatchBytes)
              .pollInterval(pollInterval)
              .listenForNotifications(listenForNotifications)
              .maxAttempts(maxAttempts)
              .maxRetryHint(maxRetryHint)
              .publishTimeout(publishTimeout)
              .ordering(ordering)
              .deadLetterPolicy(deadLetterPolicy)
              .completion(completion)
              .lastErrorMaxLength(lastErrorMaxLength)
              .errorBackoffMax(errorBackoffMax)
              .metricsRefreshInterval(metricsRefreshInterval)
              .synchronousCommit(synchronousCommit);
      try {
        builder.exponentialBackoff(
            backoff.initial, backoff.multiplier, backoff.jitter, backoff.max);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(
            "Invalid pgoutbox.relay.backoff.*: " + e.getMessage(), e);
      }
      return builder.build();
    }

    /** Whether the relay runs. */
    public boolean isEnabled() {
      return enabled;
    }

    /** Sets whether the relay runs. */
    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    /** The relay's name. */
    public String getName() {
      return name;
    }

    /** Sets the relay's name (letters, digits, '.', '_', '-'; at most 48 characters). */
    public void setName(String name) {
      OutboxRelay.builder().name(name);
      this.name = name;
    }

    /** Batch size. */
    public int getBatchSize() {
      return batchSize;
    }

    /** Sets the batch size. */
    public void setBatchSize(int batchSize) {
      RelayConfig.builder().batchSize(batchSize);
      this.batchSize = batchSize;
    }

    /** Most bytes per batch. */
    public int getMaxBatchBytes() {
      return maxBatchBytes;
    }

    /** Sets the most bytes per batch. */
    public void setMaxBatchBytes(int bytes) {
      RelayConfig.builder().maxBatchBytes(bytes);
      this.maxBatchBytes = bytes;
    }

    /** Poll interval. */
    public Duration getPollInterval() {
      return pollInterval;
    }

    /** Sets the poll interval. */
    public void setPollInterval(Duration pollInterval) {
      RelayConfig.builder().pollInterval(pollInterval);
      this.pollInterval = pollInterval;
    }

    /** Whether the relay listens for notifications. */
    public boolean isListenForNotifications() {
      return listenForNotifications;
    }

    /** Sets whether the relay listens for notifications. */
    public void setListenForNotifications(boolean listen) {
      this.listenForNotifications = listen;
    }

    /** Max attempts. */
    public int getMaxAttempts() {
      return maxAttempts;
    }

    /** Sets the max attempts. */
    public void setMaxAttempts(int maxAttempts) {
      RelayConfig.builder().maxAttempts(maxAttempts);
      this.maxAttempts = maxAttempts;
    }

    /** Max retry hint. */
    public Duration getMaxRetryHint() {
      return maxRetryHint;
    }

    /** Sets the max retry hint. */
    public void setMaxRetryHint(Duration maxRetryHint) {
      RelayConfig.builder().maxRetryHint(maxRetryHint);
      this.maxRetryHint = maxRetryHint;
    }

    /** Publish timeout. */
    public Duration getPublishTimeout() {
      return publishTimeout;
    }

    /** Sets the publish timeout. */
    public void setPublishTimeout(Duration publishTimeout) {
      RelayConfig.builder().publishTimeout(publishTimeout);
      this.publishTimeout = publishTimeout;
    }

    /** Ordering. */
    public Ordering getOrdering() {
      return ordering;
    }

    /** Sets the ordering. */
    public void setOrdering(Ordering ordering) {
      RelayConfig.builder().ordering(ordering);
      this.ordering = ordering;
    }

    /** Dead-letter policy. */
    public DeadLetterPolicy getDeadLetterPolicy() {
      return deadLetterPolicy;
    }

    /** Sets the dead-letter policy. */
    public void setDeadLetterPolicy(DeadLetterPolicy deadLetterPolicy) {
      RelayConfig.builder().deadLetterPolicy(deadLetterPolicy);
      this.deadLetterPolicy = deadLetterPolicy;
    }

    /** Completion. */
    public Completion getCompletion() {
      return completion;
    }

    /** Sets the completion. */
    public void setCompletion(Completion completion) {
      RelayConfig.builder().completion(completion);
      this.completion = completion;
    }

    /** Longest stored last_error. */
    public int getLastErrorMaxLength() {
      return lastErrorMaxLength;
    }

    /** Sets the longest stored last_error. */
    public void setLastErrorMaxLength(int lastErrorMaxLength) {
      RelayConfig.builder().lastErrorMaxLength(lastErrorMaxLength);
      this.lastErrorMaxLength = lastErrorMaxLength;
    }

    /** Error backoff cap. */
    public Duration getErrorBackoffMax() {
      return errorBackoffMax;
    }

    /** Sets the error backoff cap. */
    public void setErrorBackoffMax(Duration errorBackoffMax) {
      RelayConfig.builder().errorBackoffMax(errorBackoffMax);
      this.errorBackoffMax = errorBackoffMax;
    }

    /** Gauge refresh interval. */
    public Duration getMetricsRefreshInterval() {
      return metricsRefreshInterval;
    }

    /** Sets the gauge refresh interval. */
    public void setMetricsRefreshInterval(Duration metricsRefreshInterval) {
      RelayConfig.builder().metricsRefreshInterval(metricsRefreshInterval);
      this.metricsRefreshInterval = metricsRefreshInterval;
    }

    /** Whether relay commits are synchronous. */
    public boolean isSynchronousCommit() {
      return synchronousCommit;
    }

    /** Sets whether relay commits are synchronous. */
    public void setSynchronousCommit(boolean synchronousCommit) {
      this.synchronousCommit = synchronousCommit;
    }

    /** Shutdown timeout. */
    public Duration getShutdownTimeout() {
      return shutdownTimeout;
    }

    /** Sets the shutdown timeout (0 to 1h). */
    public void setShutdownTimeout(Duration shutdownTimeout) {
      if (shutdownTimeout == null
          || shutdownTimeout.isNegative()
          || shutdownTimeout.compareTo(Duration.ofHours(1)) > 0) {
        throw new IllegalArgumentException(
            "shutdownTimeout must be between PT0S and PT1H, was " + shutdownTimeout);
      }
      this.shutdownTimeout = shutdownTimeout;
    }

    /** Executor threads. */
    public int getExecutorThreads() {
      return executorThreads;
    }

    /** Sets the executor threads (2 to 64: the relay wants a spare thread while idle). */
    public void setExecutorThreads(int executorThreads) {
      if (executorThreads < 2 || executorThreads > 64) {
        throw new IllegalArgumentException(
            "executorThreads must be between 2 and 64, was " + executorThreads);
      }
      this.executorThreads = executorThreads;
    }

    /** {@code pgoutbox.relay.backoff.*}. */
    public Backoff getBackoff() {
      return backoff;
    }

    /** {@code pgoutbox.relay.tracing.*}. */
    public Tracing getTracing() {
      return tracing;
    }
  }

  /**
   * {@code pgoutbox.relay.tracing.*}: the relay's span per published event, through whatever the
   * application traces with (a Micrometer ObservationRegistry with a Tracer, else an OpenTelemetry
   * bean, else the global OpenTelemetry the Java agent sets).
   */
  public static class Tracing {

    /**
     * Whether the relay traces what it publishes. When false, the trace context stored with each
     * event still reaches the consumer, with no relay span.
     */
    private boolean enabled = true;

    /**
     * Whether each relay span starts a trace of its own, linked to the request that wrote the
     * event, instead of being its child.
     */
    private boolean linkToStoredContext;

    /** Whether the relay traces. */
    public boolean isEnabled() {
      return enabled;
    }

    /** Sets whether the relay traces. */
    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    /** Whether spans are linked instead of parented. */
    public boolean isLinkToStoredContext() {
      return linkToStoredContext;
    }

    /** Sets whether spans are linked instead of parented. */
    public void setLinkToStoredContext(boolean linkToStoredContext) {
      this.linkToStoredContext = linkToStoredContext;
    }
  }

  /**
   * {@code pgoutbox.relay.backoff.*}: exponential random backoff between attempts of one event. The
   * combination is checked when the relay is built (max must not be below initial).
   */
  public static class Backoff {

    /** Delay after the first failure (1ms to 1d). */
    private Duration initial = Duration.ofSeconds(1);

    /** Factor applied per further failure (1.0 to 100.0). */
    private double multiplier = 2.0;

    /** Randomization factor, 0.0 (none) to below 1.0. */
    private double jitter = 0.5;

    /** Cap of the delay (initial to 7d). */
    private Duration max = Duration.ofMinutes(10);

    /** Initial delay. */
    public Duration getInitial() {
      return initial;
    }

    /** Sets the initial delay. */
    public void setInitial(Duration initial) {
      RelayConfig.builder()
          .exponentialBackoff(
              initial, RelayConfig.DEFAULT_BACKOFF_MULTIPLIER, 0.0, Duration.ofDays(7));
      this.initial = initial;
    }

    /** Multiplier. */
    public double getMultiplier() {
      return multiplier;
    }

    /** Sets the multiplier. */
    public void setMultiplier(double multiplier) {
      RelayConfig.builder()
          .exponentialBackoff(Duration.ofSeconds(1), multiplier, 0.0, Duration.ofSeconds(1));
      this.multiplier = multiplier;
    }

    /** Jitter. */
    public double getJitter() {
      return jitter;
    }

    /** Sets the jitter. */
    public void setJitter(double jitter) {
      RelayConfig.builder()
          .exponentialBackoff(Duration.ofSeconds(1), 1.0, jitter, Duration.ofSeconds(1));
      this.jitter = jitter;
    }

    /** Cap. */
    public Duration getMax() {
      return max;
    }

    /** Sets the cap. */
    public void setMax(Duration max) {
      RelayConfig.builder().exponentialBackoff(Duration.ofMillis(1), 1.0, 0.0, max);
      this.max = max;
    }
  }

  /** Publisher kinds the starter can build from properties. */
  public enum PublisherType {
    /**
     * Apache Kafka, with Boot's spring.kafka.* producer settings when spring-boot-kafka is there.
     */
    KAFKA,
    /** RabbitMQ, on the connection Boot configured from spring.rabbitmq.*. */
    RABBITMQ,
    /** NATS JetStream, connected from pgoutbox.publisher.nats.*. */
    NATS,
    /** HTTP webhooks, posted to pgoutbox.publisher.webhook.url. */
    WEBHOOK
  }

  /** {@code pgoutbox.publisher.*}: where the relay sends events, unless a Publisher bean exists. */
  public static class Publisher {

    /** The publisher to build; ignored when the application declares a Publisher bean. */
    private @Nullable PublisherType type;

    private final Kafka kafka = new Kafka();
    private final RabbitMq rabbitmq = new RabbitMq();
    private final Nats nats = new Nats();
    private final Webhook webhook = new Webhook();

    /** The publisher type. */
    public @Nullable PublisherType getType() {
      return type;
    }

    /** Sets the publisher type. */
    public void setType(@Nullable PublisherType type) {
      this.type = type;
    }

    /** {@code pgoutbox.publisher.kafka.*}. */
    public Kafka getKafka() {
      return kafka;
    }

    /** {@code pgoutbox.publisher.rabbitmq.*}. */
    public RabbitMq getRabbitmq() {
      return rabbitmq;
    }

    /** {@code pgoutbox.publisher.nats.*}. */
    public Nats getNats() {
      return nats;
    }

    /** {@code pgoutbox.publisher.webhook.*}. */
    public Webhook getWebhook() {
      return webhook;
    }
  }

  /**
   * {@code pgoutbox.publisher.kafka.*}: the producer starts from Boot's own producer settings
   * (spring.kafka.*, connection details, SSL bundle) when spring-boot-kafka is present; these
   * settings come on top.
   */
  public static class Kafka {

    /**
     * Brokers to connect to; overrides spring.kafka.bootstrap-servers, required without
     * spring-boot-kafka.
     */
    private List<String> bootstrapServers = new ArrayList<>();

    /** Every event to this one topic (unset: one topic per aggregate type, see topic-prefix). */
    private @Nullable String topic;

    /** Prefix of the per-aggregate-type topic: "outbox." sends order events to "outbox.order". */
    private String topicPrefix = "";

    /** How long a record may take to be acknowledged, retries included (at least 1s). */
    private Duration deliveryTimeout = Duration.ofSeconds(30);

    /** Further producer properties (security, compression...), over Boot's. */
    private Map<String, String> properties = new LinkedHashMap<>();

    /** The bootstrap servers. */
    public List<String> getBootstrapServers() {
      return bootstrapServers;
    }

    /** Sets the bootstrap servers. */
    public void setBootstrapServers(List<String> bootstrapServers) {
      this.bootstrapServers = bootstrapServers;
    }

    /** The fixed topic. */
    public @Nullable String getTopic() {
      return topic;
    }

    /** Sets the fixed topic. */
    public void setTopic(@Nullable String topic) {
      if (topic != null) {
        KafkaRouting.fixed(topic);
      }
      this.topic = topic;
    }

    /** The topic prefix. */
    public String getTopicPrefix() {
      return topicPrefix;
    }

    /** Sets the topic prefix. */
    public void setTopicPrefix(String topicPrefix) {
      this.topicPrefix = topicPrefix;
    }

    /** The delivery timeout. */
    public Duration getDeliveryTimeout() {
      return deliveryTimeout;
    }

    /** Sets the delivery timeout (at least 1s). */
    public void setDeliveryTimeout(Duration deliveryTimeout) {
      if (deliveryTimeout == null || deliveryTimeout.compareTo(Duration.ofSeconds(1)) < 0) {
        throw new IllegalArgumentException(
            "deliveryTimeout must be at least 1s, was " + deliveryTimeout);
      }
      this.deliveryTimeout = deliveryTimeout;
    }

    /** The extra producer properties. */
    public Map<String, String> getProperties() {
      return properties;
    }

    /** Sets the extra producer properties. */
    public void setProperties(Map<String, String> properties) {
      this.properties = properties;
    }
  }

  /** How a RabbitMQ exchange routes events. */
  public enum RabbitMqRoutingKey {
    /** Routing key = the event type. */
    EVENT_TYPE,
    /** Routing key = the aggregate id. */
    AGGREGATE_ID
  }

  /** {@code pgoutbox.publisher.rabbitmq.*}: the connection itself is Boot's spring.rabbitmq.*. */
  public static class RabbitMq {

    /** Exchange the events are published to (required with type=rabbitmq). */
    private @Nullable String exchange;

    /** What the routing key is. */
    private RabbitMqRoutingKey routingKey = RabbitMqRoutingKey.EVENT_TYPE;

    /** How long to wait for a publisher confirm. */
    private Duration confirmTimeout = Duration.ofSeconds(30);

    /** The exchange. */
    public @Nullable String getExchange() {
      return exchange;
    }

    /** Sets the exchange. */
    public void setExchange(@Nullable String exchange) {
      this.exchange = exchange;
    }

    /** The routing key kind. */
    public RabbitMqRoutingKey getRoutingKey() {
      return routingKey;
    }

    /** Sets the routing key kind. */
    public void setRoutingKey(RabbitMqRoutingKey routingKey) {
      this.routingKey = routingKey;
    }

    /** Confirm timeout. */
    public Duration getConfirmTimeout() {
      return confirmTimeout;
    }

    /** Sets the confirm timeout. */
    public void setConfirmTimeout(Duration confirmTimeout) {
      this.confirmTimeout = confirmTimeout;
    }
  }

  /**
   * {@code pgoutbox.publisher.nats.*}: the relay's own NATS connection (reconnecting forever) and
   * the subjects events go to; a JetStream stream must capture them.
   */
  public static class Nats {

    /** NATS server URLs. */
    private List<String> servers = new ArrayList<>(List.of("nats://localhost:4222"));

    /** Subjects are {@code <prefix>.<aggregate_type>.<event_type>}. */
    private String subjectPrefix = "outbox";

    /** How long to wait for JetStream's ack of one message (1ms to 10m). */
    private Duration ackTimeout = Duration.ofSeconds(10);

    /** How long to wait for a connection to a server. */
    private Duration connectionTimeout = Duration.ofSeconds(2);

    /** User name (with password). */
    private @Nullable String username;

    /** Password (with username). */
    private @Nullable String password;

    /** Authentication token. */
    private @Nullable String token;

    /** The servers. */
    public List<String> getServers() {
      return servers;
    }

    /** Sets the servers. */
    public void setServers(List<String> servers) {
      this.servers = servers;
    }

    /** The subject prefix. */
    public String getSubjectPrefix() {
      return subjectPrefix;
    }

    /** Sets the subject prefix (a subject without whitespace or wildcards). */
    public void setSubjectPrefix(String subjectPrefix) {
      NatsRouting.byTypes(subjectPrefix);
      this.subjectPrefix = subjectPrefix;
    }

    /** The ack timeout. */
    public Duration getAckTimeout() {
      return ackTimeout;
    }

    /** Sets the ack timeout (1ms to 10m). */
    public void setAckTimeout(Duration ackTimeout) {
      if (ackTimeout == null
          || ackTimeout.toMillis() < 1
          || ackTimeout.compareTo(Duration.ofMinutes(10)) > 0) {
        throw new IllegalArgumentException(
            "ackTimeout must be between 1ms and 10 minutes, was " + ackTimeout);
      }
      this.ackTimeout = ackTimeout;
    }

    /** The connection timeout. */
    public Duration getConnectionTimeout() {
      return connectionTimeout;
    }

    /** Sets the connection timeout. */
    public void setConnectionTimeout(Duration connectionTimeout) {
      this.connectionTimeout = connectionTimeout;
    }

    /** The user name. */
    public @Nullable String getUsername() {
      return username;
    }

    /** Sets the user name. */
    public void setUsername(@Nullable String username) {
      this.username = username;
    }

    /** The password. */
    public @Nullable String getPassword() {
      return password;
    }

    /** Sets the password. */
    public void setPassword(@Nullable String password) {
      this.password = password;
    }

    /** The token. */
    public @Nullable String getToken() {
      return token;
    }

    /** Sets the token. */
    public void setToken(@Nullable String token) {
      this.token = token;
    }
  }

  /** {@code pgoutbox.publisher.webhook.*}: every event POSTed to one URL. */
  public static class Webhook {

    /** The absolute http(s) URL every event is POSTed to (required with type=webhook). */
    private @Nullable URI url;

    /** How long one exchange may take: connection, headers and body. */
    private Duration requestTimeout = Duration.ofSeconds(10);

    /** Requests of one batch in flight at once, each on a different aggregate (1 to 1024). */
    private int maxConcurrency = 16;

    /**
     * Standard Webhooks secret (whsec_ and the base64 of 24 to 64 bytes) that signs each request's
     * id, timestamp and body (webhook-id, webhook-timestamp, webhook-signature); unset: unsigned.
     */
    private @Nullable String signingSecret;

    /**
     * Deprecated: secret that also signs each body alone (HMAC-SHA256, X-Pgoutbox-Signature), for
     * receivers not yet on Standard Webhooks; replayable. Unset: not sent.
     */
    private @Nullable String legacySigningSecret;

    /** The URL. */
    public @Nullable URI getUrl() {
      return url;
    }

    /** Sets the URL (an absolute http or https URL). */
    public void setUrl(@Nullable URI url) {
      if (url != null) {
        WebhookRouting.fixed(url);
      }
      this.url = url;
    }

    /** The request timeout. */
    public Duration getRequestTimeout() {
      return requestTimeout;
    }

    /** Sets the request timeout (positive). */
    public void setRequestTimeout(Duration requestTimeout) {
      WebhookPublisher.builder(URI.create("http://localhost/")).requestTimeout(requestTimeout);
      this.requestTimeout = requestTimeout;
    }

    /** The most requests in flight. */
    public int getMaxConcurrency() {
      return maxConcurrency;
    }

    /** Sets the most requests in flight (1 to 1024). */
    public void setMaxConcurrency(int maxConcurrency) {
      WebhookPublisher.builder(URI.create("http://localhost/")).maxConcurrency(maxConcurrency);
      this.maxConcurrency = maxConcurrency;
    }

    /** The Standard Webhooks signing secret. */
    public @Nullable String getSigningSecret() {
      return signingSecret;
    }

    /**
     * Sets the Standard Webhooks signing secret: {@code whsec_} and the base64 of 24 to 64 bytes,
     * checked when the publisher is built (a failed binding would print the value).
     */
    public void setSigningSecret(@Nullable String signingSecret) {
      this.signingSecret = signingSecret;
    }

    /** The deprecated X-Pgoutbox-Signature secret. */
    public @Nullable String getLegacySigningSecret() {
      return legacySigningSecret;
    }

    /**
     * Sets the deprecated X-Pgoutbox-Signature secret (not empty): the body alone is signed, so a
     * captured request replays. Only while receivers move to Standard Webhooks.
     */
    public void setLegacySigningSecret(@Nullable String legacySigningSecret) {
      if (legacySigningSecret != null && legacySigningSecret.isEmpty()) {
        throw new IllegalArgumentException(
            "pgoutbox.publisher.webhook.legacy-signing-secret must not be empty");
      }
      this.legacySigningSecret = legacySigningSecret;
    }
  }

  /** {@code pgoutbox.health.*}: when the health indicator reports DOWN. */
  public static class Health {

    /** DOWN when the oldest pending event is older than this (unset: not checked). */
    private @Nullable Duration maxOldestPendingAge;

    /** DOWN when there are more dead letters than this (unset: not checked). */
    private @Nullable Long maxDeadLetters;

    /** Oldest pending age threshold. */
    public @Nullable Duration getMaxOldestPendingAge() {
      return maxOldestPendingAge;
    }

    /** Sets the oldest pending age threshold. */
    public void setMaxOldestPendingAge(@Nullable Duration maxOldestPendingAge) {
      this.maxOldestPendingAge = maxOldestPendingAge;
    }

    /** Dead letters threshold. */
    public @Nullable Long getMaxDeadLetters() {
      return maxDeadLetters;
    }

    /** Sets the dead letters threshold. */
    public void setMaxDeadLetters(@Nullable Long maxDeadLetters) {
      this.maxDeadLetters = maxDeadLetters;
    }
  }
}

package dev.pgoutbox.relay;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.internal.BatchRunner;
import dev.pgoutbox.relay.internal.FleetRegistry;
import dev.pgoutbox.relay.internal.ListenConnections;
import dev.pgoutbox.relay.internal.NotificationWaiter;
import dev.pgoutbox.relay.internal.RelayLog;
import dev.pgoutbox.relay.internal.RelayLoop;
import dev.pgoutbox.relay.internal.SafeListener;
import dev.pgoutbox.relay.internal.Sql;
import dev.pgoutbox.relay.internal.StatsReader;
import dev.pgoutbox.relay.internal.Tracings;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Publishes committed outbox events: claims them, hands them to a {@link Publisher} in order per
 * aggregate, and marks them published, retried with backoff, or dead.
 *
 * <pre>{@code
 * OutboxRelay relay = OutboxRelay.builder()
 *     .name("orders")
 *     .dataSource(hikari)                    // the host's pool
 *     .schema("outbox")
 *     .publisher(kafkaPublisher)
 *     .executor(Executors.newScheduledThreadPool(1, Thread.ofVirtual().factory()))
 *     .config(RelayConfig.builder().batchSize(500).build())
 *     .listener(new MicrometerRelayMetrics(registry, "orders"))
 *     .build();
 * relay.start();
 * ...
 * relay.close();                             // lets the batch in flight finish; loses nothing
 * }</pre>
 *
 * <p><b>Threads.</b> The relay runs as a chain of short tasks on the host's executor and starts no
 * thread of its own when given one. While events flow, one task of the chain runs at a time; while
 * idle with notifications on, it waits on the executor's thread in slices of at most 250 ms, so
 * give it an executor with a spare thread (or virtual threads). Without an executor the relay
 * creates one single-thread executor, named after it, and shuts it down on {@link #close()}.
 *
 * <p><b>Delivery.</b> At least once: a relay that crashes after the broker's ack and before its
 * commit publishes those events again, so consumers deduplicate by event id (see {@code Inbox}).
 * Any number of relays, in any number of processes, may run against one outbox.
 *
 * <p>Thread-safe. {@link #start()} once; {@link #stop(Duration)} and {@link #close()} any time.
 */
public final class OutboxRelay implements AutoCloseable {

  /** Longest relay name; it appears in log lines, metric tags and {@code application_name}. */
  public static final int MAX_NAME_LENGTH = 48;

  /** Default wait of {@link #close()} for the batch in flight. */
  public static final Duration DEFAULT_STOP_TIMEOUT = Duration.ofSeconds(30);

  /** A transaction open longer than this is reported as holding back vacuum. */
  static final Duration VACUUM_WARNING_AGE = Duration.ofMinutes(10);

  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]*");

  private final String name;
  private final DataSource dataSource;
  private final String schema;
  private final Publisher publisher;
  private final RelayConfig config;
  private final RelayListener listener;
  private final PublishTracing tracing;
  private final @Nullable ListenConnectionFactory listenConnectionFactory;
  private final @Nullable ScheduledExecutorService hostExecutor;
  private final RelayLog log;
  private final BatchRunner runner;
  private final StatsReader stats;
  private final FleetRegistry fleet;

  private State state = State.NEW;
  private @Nullable ScheduledExecutorService executor;
  private @Nullable RelayLoop loop;
  private @Nullable ScheduledFuture<?> statsTask;
  private @Nullable ScheduledFuture<?> heartbeatTask;

  private enum State {
    NEW,
    RUNNING,
    STOPPED
  }

  private OutboxRelay(Builder b) {
    this.name = b.name;
    this.dataSource = b.dataSource;
    this.schema = b.schema;
    this.publisher = b.publisher;
    this.config = b.config;
    this.listener = new SafeListener(b.listener, new RelayLog(b.name));
    this.hostExecutor = b.executor;
    this.tracing = b.tracing != null ? b.tracing : Tracings.automatic();
    this.log = new RelayLog(name);
    this.listenConnectionFactory =
        b.listenConnectionFactory != null
            ? b.listenConnectionFactory
            : ListenConnections.derive(b.dataSource);
    this.runner =
        new BatchRunner(
            dataSource,
            schema,
            OutboxSchema.jooqSettings(schema),
            publisher,
            tracing,
            config,
            listener,
            log);
    this.stats = StatsReader.on(dataSource, schema);
    this.fleet =
        new FleetRegistry(
            dataSource,
            OutboxSchema.jooqSettings(schema),
            schema,
            name,
            config.ordering(),
            config.deadLetterPolicy(),
            FleetRegistry.TABLE_SOURCE);
  }

  /** A builder; {@code dataSource} and {@code publisher} are required. */
  public static Builder builder() {
    return new Builder();
  }

  /** The relay's name, as in its log lines and metric tags. */
  public String name() {
    return name;
  }

  /** The relay's settings. */
  public RelayConfig config() {
    return config;
  }

  /**
   * Starts relaying on the executor and logs the effective configuration once.
   *
   * <p>Relays on one outbox must agree on {@link RelayConfig#ordering()} and {@link
   * RelayConfig#deadLetterPolicy()}: each registers in the schema's {@code outbox_relays} table,
   * and a relay whose settings differ from a live relay's refuses to start. A stopped relay leaves
   * the table; a crashed one stops counting 30 s after its last heartbeat.
   *
   * @throws IllegalStateException if already started or stopped (a stopped relay does not start
   *     again: build a new one), or if notifications are on and no {@code LISTEN} connection can be
   *     derived from the data source (the message says what to pass)
   * @throws OutboxException if the outbox table does not exist in the schema, or a running relay on
   *     the same outbox uses another ordering or dead-letter policy (the message names it)
   */
  public synchronized void start() {
    if (state != State.NEW) {
      throw new IllegalStateException(
          "relay "
              + name
              + (state == State.RUNNING
                  ? " was already started"
                  : " was stopped and cannot start again: build a new relay (it may share the"
                      + " publisher and data source)"));
    }
    checkSchema();
    boolean ownExecutor = hostExecutor == null;
    ScheduledExecutorService exec =
        ownExecutor
            ? Executors.newSingleThreadScheduledExecutor(
                Thread.ofPlatform().name("pgoutbox-relay-" + name).daemon(true).factory())
            : hostExecutor;
    NotificationWaiter waiter = null;
    String wakeUp;
    if (!config.listenForNotifications()) {
      wakeUp = "poll-only every " + config.pollInterval();
    } else if (listenConnectionFactory == null) {
      throw new IllegalStateException(
          "pgoutbox-relay["
              + name
              + "] cannot derive an unpooled LISTEN connection from "
              + dataSource.getClass().getName()
              + " (known: HikariCP configured with setJdbcUrl, setDataSourceClassName or"
              + " setDataSource of a pgjdbc data source; pgjdbc's PGSimpleDataSource). Pass"
              + " listenConnectionFactory(ListenConnectionFactory.of(url, user, password)) to be woken by"
              + " notifications, or set RelayConfig listenForNotifications(false) to poll only");
    } else {
      String channel = OutboxSchema.notifyChannel(schema);
      waiter =
          new NotificationWaiter(
              listenConnectionFactory,
              channel,
              Sql.applicationName(name) + "-listen",
              log,
              config.errorBackoffMax());
      wakeUp = "LISTEN " + channel + ", fallback poll every " + config.pollInterval();
    }
    registerInFleet();
    RelayLoop newLoop =
        new RelayLoop(
            exec,
            runner,
            waiter,
            config.batchSize(),
            config.pollInterval(),
            config.errorBackoffMax(),
            listener,
            log);
    executor = exec;
    loop = newLoop;
    state = State.RUNNING;
    log.info(
        "Started (schema={}, {}, wakeUp={}, publisher={}, tracing={}, executor={})",
        schema,
        config,
        wakeUp,
        publisher.getClass().getName(),
        tracing == PublishTracing.NONE ? "off" : tracing,
        ownExecutor ? "own single thread" : "host's");
    newLoop.start();
    heartbeatTask =
        exec.scheduleWithFixedDelay(
            this::heartbeat,
            FleetRegistry.HEARTBEAT_EVERY.toMillis(),
            FleetRegistry.HEARTBEAT_EVERY.toMillis(),
            TimeUnit.MILLISECONDS);
    statsTask =
        exec.scheduleWithFixedDelay(
            this::refreshStats,
            0,
            config.metricsRefreshInterval().toMillis(),
            TimeUnit.MILLISECONDS);
  }

  /**
   * Runs one batch on the caller's thread: claim, publish, mark, commit. For tests, tools and hosts
   * that drive the relay themselves; not while the relay is started.
   *
   * @return events claimed; a full batch means more are probably waiting
   * @throws IllegalStateException if the relay is started
   * @throws OutboxException when the database fails (the batch was rolled back)
   */
  public int runOnce() throws InterruptedException {
    synchronized (this) {
      if (state == State.RUNNING) {
        throw new IllegalStateException(
            "relay " + name + " is running; runOnce() is for manual use");
      }
    }
    try {
      return runner.runOnce();
    } catch (SQLException | org.jooq.exception.DataAccessException e) {
      throw new OutboxException(
          "pgoutbox-relay[" + name + "] batch failed and was rolled back: " + e.getMessage(), e);
    }
  }

  /**
   * Stops relaying: no new batch starts; the batch in flight may finish within {@code timeout},
   * else it is interrupted and rolled back (its events stay pending). Idempotent.
   *
   * @return true when the relay stopped within the timeout
   */
  public boolean stop(Duration timeout) {
    requireNonNull(timeout, "timeout must not be null");
    RelayLoop current;
    synchronized (this) {
      if (state != State.RUNNING) {
        state = State.STOPPED;
        return true;
      }
      state = State.STOPPED;
      current = loop;
      if (statsTask != null) {
        statsTask.cancel(false);
      }
      if (heartbeatTask != null) {
        heartbeatTask.cancel(false);
      }
    }
    boolean clean;
    try {
      clean = current == null || current.stop(timeout);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      clean = false;
    }
    try {
      fleet.deregister();
    } catch (RuntimeException e) {
      log.warn(
          "Could not leave the relay registry ({}); the entry expires by itself", e.toString());
    }
    if (hostExecutor == null && executor != null) {
      executor.shutdownNow();
    }
    log.info("Stopped{}", clean ? "" : " (the batch in flight was interrupted and rolled back)");
    return clean;
  }

  /** Whether the relay is started and its loop has not ended. */
  public synchronized boolean isRunning() {
    return state == State.RUNNING && loop != null && loop.isRunning();
  }

  /** {@link #stop(Duration)} with {@link #DEFAULT_STOP_TIMEOUT}. Does not close the publisher. */
  @Override
  public void close() {
    stop(DEFAULT_STOP_TIMEOUT);
  }

  private void checkSchema() {
    try (Connection connection = dataSource.getConnection();
        Statement statement = connection.createStatement()) {
      statement.execute("SELECT 1 FROM " + schema + ".outbox_events LIMIT 0");
    } catch (SQLException e) {
      if ("42P01".equals(e.getSQLState()) || "3F000".equals(e.getSQLState())) {
        throw new OutboxException(
            "pgoutbox-relay["
                + name
                + "] - "
                + schema
                + ".outbox_events does not exist: run OutboxSchema.migrate(dataSource, \""
                + schema
                + "\") first",
            e);
      }
      if ("42501".equals(e.getSQLState())) {
        throw new OutboxException(
            "pgoutbox-relay["
                + name
                + "] - permission denied on "
                + schema
                + ".outbox_events: grant the relay role what db/pgoutbox/roles/grants.sql lists"
                + " (OutboxRoles.grant)",
            e);
      }
      log.warn("Cannot reach the database at start ({}); the relay keeps trying", e.getMessage());
    }
  }

  private void registerInFleet() {
    try {
      fleet.register();
    } catch (OutboxException e) {
      log.error("{}", e.getMessage());
      throw e;
    } catch (org.jooq.exception.DataAccessException e) {
      log.warn(
          "Cannot register in the relay registry yet ({}); retrying with the heartbeat",
          e.toString());
    }
  }

  private void heartbeat() {
    if (fleet.heartbeat(log, () -> stop(DEFAULT_STOP_TIMEOUT))) {
      listener.onHeartbeat();
    }
  }

  private void refreshStats() {
    try {
      OutboxStats read = stats.stats();
      listener.onStats(read);
      if (read.oldestTransactionAge().compareTo(VACUUM_WARNING_AGE) > 0) {
        log.warn(
            "A transaction has been open for {} in this database; it holds back vacuum of"
                + " outbox_events, whose dead rows then slow every claim",
            read.oldestTransactionAge());
      }
    } catch (RuntimeException e) {
      log.debug("Stats refresh failed: {}", e.toString());
    }
  }

  /** Checks a relay name (also {@link ClaimProbe}'s); returns it unchanged. */
  static String requireValidName(String name) {
    if (name == null || name.isEmpty() || name.length() > MAX_NAME_LENGTH) {
      throw new IllegalArgumentException(
          "name must be between 1 and "
              + MAX_NAME_LENGTH
              + " characters long, was "
              + (name == null ? "null" : name.length()));
    }
    if (!NAME.matcher(name).matches()) {
      throw new IllegalArgumentException(
          "name must be letters, digits, '.', '_' or '-' (starting with a letter or digit), was '"
              + name
              + "'");
    }
    return name;
  }

  /** Builder of {@link OutboxRelay}; not thread-safe. The shared settings: {@link RelayBuilder}. */
  public static final class Builder extends RelayBuilder<Builder> {
    private @Nullable ListenConnectionFactory listenConnectionFactory;

    private Builder() {}

    /**
     * Where to open the dedicated {@code LISTEN} connection. Derived from HikariCP and pgjdbc data
     * sources when not given; with none, the relay polls.
     */
    public Builder listenConnectionFactory(ListenConnectionFactory factory) {
      this.listenConnectionFactory =
          requireNonNull(factory, "listenConnectionFactory must not be null");
      return this;
    }

    /**
     * The relay, not yet started.
     *
     * @throws IllegalStateException if the data source or the publisher is missing
     */
    public OutboxRelay build() {
      requireDataSourceAndPublisher();
      return new OutboxRelay(this);
    }
  }
}

package dev.pgoutbox.relay.wal;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.core.OutboxTransport;
import dev.pgoutbox.relay.Completion;
import dev.pgoutbox.relay.ListenConnectionFactory;
import dev.pgoutbox.relay.Ordering;
import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.PublishTracing;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayBuilder;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.RelayListener;
import dev.pgoutbox.relay.WalSlotStats;
import dev.pgoutbox.relay.internal.RelayLog;
import dev.pgoutbox.relay.internal.RelayLoop;
import dev.pgoutbox.relay.internal.RelaySettings;
import dev.pgoutbox.relay.internal.SafeListener;
import dev.pgoutbox.relay.internal.StatsReader;
import dev.pgoutbox.relay.internal.Tracings;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.ScheduledExecutorService;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Publishes committed outbox events in <b>commit order</b>, read from a logical replication slot
 * (PostgreSQL's {@code pgoutput} plugin) instead of claimed from the table. Writers do not change.
 * See docs/wal-relay.md for when to choose it and what it needs from the database ({@code wal_level
 * = logical}, a replication slot, a role with {@code REPLICATION}).
 *
 * <pre>{@code
 * WalRelay relay = WalRelay.builder()
 *     .name("orders")
 *     .dataSource(hikari)                    // the host's pool
 *     .schema("outbox")
 *     .publisher(kafkaPublisher)
 *     .executor(Executors.newScheduledThreadPool(3)) // platform threads: see Threads below
 *     .build();
 * relay.start();                             // attaches to the slot, or stands by
 * ...
 * relay.close();
 * }</pre>
 *
 * <p><b>What it does.</b> One instance streams the slot (the <i>reader</i>); the others stand by
 * and take over within {@link Builder#attachRetryInterval} of its end. The reader publishes each
 * transaction's events, in commit order, through the {@link Publisher}, completes the published
 * rows in bulk ({@link RelayConfig#completion()}), and confirms a transaction to the slot only once
 * every event of it is completed or parked: a crash resumes from the slot, at least once, in order.
 * An event that fails is <i>parked</i> (attempts, backoff, {@code last_error}, dead letter, as the
 * table relay records them) with the later events of its aggregate, and every instance's table
 * relay (the <i>drainer</i>) publishes parked events with the usual claim, backoff and dead
 * letters, per aggregate in the commit order the slot gave them; the aggregate returns to the
 * reader once nothing of it is parked. If the slot is dropped or invalidated, or skipped events
 * (its position moved by hand), the relay says so at ERROR and its drainer publishes every pending
 * event from then on, as {@link OutboxRelay} does, until another instance's start creates a new
 * slot: the instance then claims parked events only again and stands by to read it.
 *
 * <p><b>Settings.</b> {@link RelayConfig} as for {@link OutboxRelay}, with strict ordering (the
 * default; {@code UNORDERED} is refused), except two defaults: {@link #DEFAULT_BATCH_SIZE} and
 * {@link #DEFAULT_COMPLETION} (delivered rows are deleted: the table keeps no history of them; set
 * {@code completion(MARK_PROCESSED)} to keep it). The drainer polls every {@code pollInterval}.
 *
 * <p><b>Threads.</b> Three chains of short tasks share the executor: the reader (which waits for
 * data on its thread, at most 100 ms at a time), the completer and the drainer; give it three
 * platform threads. Without an executor the relay creates a pool of three. Virtual threads work,
 * but the reader's latency then depends on the host's other virtual threads: woken by data, it also
 * waits for a free carrier (measured at 500 events/s on two cores: p99 3-64 ms on virtual threads
 * against 2-4 ms on platform threads; docs/results/2026-12-01-to-12-03-wal-relay-figures.md).
 *
 * <p>Do not run an {@link OutboxRelay} on the same outbox at the same time: it would publish events
 * the reader publishes too. Thread-safe; {@link #start()} once.
 */
public final class WalRelay implements AutoCloseable {

  /** Default pause between attempts to attach to the slot while another instance streams it. */
  public static final Duration DEFAULT_ATTACH_RETRY_INTERVAL = Duration.ofSeconds(1);

  /**
   * Default of how long the first start waits for its new slot ({@link
   * Builder#slotCreationTimeout}).
   */
  public static final Duration DEFAULT_SLOT_CREATION_TIMEOUT = Duration.ofSeconds(30);

  /**
   * The reader's batch size when the {@link RelayConfig} leaves {@code batchSize} unset. Larger
   * than the table relay's: a batch is published as soon as the stream pauses, not when it is full,
   * so a large one costs no latency under light load; under load it lets a completion (and the
   * publisher's call) cover more events. The drainer claims parked events in batches of it too.
   */
  public static final int DEFAULT_BATCH_SIZE = 2_000;

  /**
   * The completion when the {@link RelayConfig} leaves {@code completion} unset: {@link
   * Completion#DELETE}. A delivered row is deleted, not marked: the table then holds only what is
   * pending (and parked, and dead), which is all that recovery after a slot loss needs, and keeps
   * no history of delivered events. Marking a row rewrites it (a new heap tuple and index entries,
   * never a HOT update), which cost more than decoding it; see docs/wal-completion.md. Set {@link
   * RelayConfig.Builder#completion} to {@link Completion#MARK_PROCESSED} to keep delivered rows
   * until {@code OutboxAdmin.purgeProcessed} (pgoutbox-admin) removes them.
   */
  public static final Completion DEFAULT_COMPLETION = Completion.DELETE;

  /** Threads of the executor the relay creates when none is given. */
  public static final int OWN_THREADS = 3;

  private final String name;
  private final String schema;
  private final Publisher publisher;
  private final RelayConfig config;
  private final RelayListener listener;
  private final @Nullable ScheduledExecutorService hostExecutor;
  private final boolean createSlot;
  private final RelayLog log;
  private final WalSlot slot;
  private final OutboxTransport transport;
  private final WalStartChecks startChecks;
  private final WalDrainer drainer;
  private final WalReaderFactory readers;
  private final WalRelayTasks tasks;

  private boolean started;
  private boolean stopped;
  private @Nullable ScheduledExecutorService executor;
  private volatile @Nullable WalReader reader;
  private @Nullable RelayLoop drainerLoop;

  private WalRelay(
      Builder b, RelaySettings settings, ListenConnectionFactory replicationConnections) {
    this.name = settings.name();
    DataSource dataSource = settings.dataSource();
    this.schema = settings.schema();
    this.publisher = settings.publisher();
    this.config = settings.config().withDefaults(DEFAULT_BATCH_SIZE, DEFAULT_COMPLETION);
    this.log = new RelayLog(name);
    this.listener = new SafeListener(settings.listener(), log);
    this.hostExecutor = settings.executor();
    PublishTracing tracing = settings.tracing() != null ? settings.tracing() : Tracings.automatic();
    this.createSlot = b.createSlot;
    this.transport = b.transport;
    String slotName = b.slotName != null ? b.slotName : WalNames.defaultName(schema);
    String publicationName = b.publicationName != null ? b.publicationName : slotName;
    this.slot =
        new WalSlot(dataSource, schema, slotName, publicationName, log, b.slotCreationTimeout);
    if (b.failoverSlot) {
      this.slot.failoverVia(replicationConnections);
    }
    this.drainer =
        new WalDrainer(dataSource, schema, publisher, tracing, config, listener, log, slot);
    this.readers =
        new WalReaderFactory(
            dataSource,
            schema,
            replicationConnections,
            slot,
            publisher,
            tracing,
            config,
            listener,
            log,
            b.attachRetry,
            transport);
    this.startChecks = new WalStartChecks(dataSource, name, schema, config, slotName, log);
    this.tasks =
        new WalRelayTasks(
            startChecks.fleet(),
            StatsReader.on(dataSource, schema),
            slot,
            listener,
            log,
            config.metricsRefreshInterval(),
            () -> stop(OutboxRelay.DEFAULT_STOP_TIMEOUT));
  }

  /** A builder; {@code dataSource} and {@code publisher} are required. */
  public static Builder builder() {
    return new Builder();
  }

  /** The relay's name, as in its log lines and metric tags. */
  public String name() {
    return name;
  }

  /** The replication slot it reads (default {@code pgoutbox_<schema>}). */
  public String slotName() {
    return slot.slotName();
  }

  /** The transports it reads: {@link Builder#transport(OutboxTransport)}. */
  public OutboxTransport transport() {
    return transport;
  }

  /** The publication the slot streams (default: the slot's name). */
  public String publicationName() {
    return slot.publicationName();
  }

  /**
   * Whether the relay was started and no stop has begun (it stops itself when, after a stall long
   * enough for its registration to expire, a relay of another source or settings took over). It is
   * false from the moment a stop begins; the reader may take up to the stop's timeout to settle its
   * work in flight, and {@link #isReading()} stays true until it has.
   */
  public synchronized boolean isRunning() {
    return started && !stopped;
  }

  /** Whether this instance streams the slot now; the others stand by. */
  public boolean isReading() {
    WalReader current = reader;
    return current != null && current.isActive();
  }

  /**
   * Whether the slot was lost (dropped, invalidated, or it skipped events) and this instance
   * publishes every pending event through its table relay; false again once it follows a new slot
   * another instance's start created ({@link RelayListener#onWalResumed}).
   */
  public boolean hasFallenBack() {
    return drainer.fallenBack();
  }

  /**
   * Registers in the relay registry, checks {@code wal_level}, creates the publication and the slot
   * when missing (and {@link Builder#createSlot} allows; creating the slot parks every pending
   * event older than it, for the drainer), and starts reading or standing by.
   *
   * @throws IllegalStateException if already started or stopped
   * @throws OutboxException naming what the database lacks: {@code wal_level}, the outbox table, a
   *     grant, the SQL to create the publication or the slot; or naming the live relay whose
   *     settings or source differ (an {@code OutboxRelay}, or a {@code WalRelay} on another slot,
   *     would publish the same events): nothing is created then
   */
  public synchronized void start() {
    if (started || stopped) {
      throw new IllegalStateException("WAL relay " + name + " was already started");
    }
    // Registered first: a relay refused for another relay's source or settings must not create a
    // slot (which would hold WAL for good) or park the backlog.
    startChecks.register();
    if (transport == OutboxTransport.MESSAGES) {
      startChecks.requireMessagesSafe();
    }
    WalSlotStats state = startChecks.prepare(slot, createSlot);
    ScheduledExecutorService exec =
        hostExecutor != null ? hostExecutor : WalRelayTasks.ownPool(name);
    executor = exec;
    started = true;
    RelayLoop loop = drainer.newLoop(exec);
    drainerLoop = loop;
    log.info(
        "Started WAL relay (schema={}, transport={}, slot={}, publication={}, {}, publisher={},"
            + " executor={})",
        schema,
        transport,
        slot.slotName(),
        slot.publicationName(),
        config,
        publisher.getClass().getName(),
        hostExecutor != null ? "host's" : "own pool of " + OWN_THREADS);
    loop.start();
    if (state.lost()) {
      fallBack(
          "replication slot " + slot.slotName() + " was invalidated (wal_status lost)",
          drainer.walInsertedOrNever());
    } else {
      reader = readers.newReader(exec, this::fallBack);
      reader.start();
    }
    tasks.start(exec);
  }

  /**
   * Falls back to claiming every pending row; {@code since}: the WAL position read before the slot
   * was last found unusable.
   */
  private void fallBack(String reason, long since) {
    drainer.fallBack(reason, since, this::resumeWal);
  }

  /** A new slot of the name exists: back to the parking rule, and a reader that stands by. */
  private synchronized void resumeWal() {
    if (stopped || !drainer.resume()) {
      return;
    }
    ScheduledExecutorService exec = executor;
    if (exec != null) {
      WalReader next = readers.newReader(exec, this::fallBack);
      reader = next;
      next.start();
    }
  }

  /**
   * Stops reading and draining; the work in flight may finish within {@code timeout}, else it is
   * interrupted. Nothing is lost: what the reader did not settle is read again from the slot.
   *
   * @return true when everything stopped within the timeout
   */
  public boolean stop(Duration timeout) {
    requireNonNull(timeout, "timeout must not be null");
    WalReader currentReader;
    RelayLoop currentDrainer;
    synchronized (this) {
      if (!started || stopped) {
        stopped = true;
        return true;
      }
      stopped = true;
      currentReader = reader;
      currentDrainer = drainerLoop;
      tasks.cancel();
    }
    boolean clean = true;
    try {
      if (currentReader != null) {
        clean &= currentReader.stop(timeout);
      }
      if (currentDrainer != null) {
        clean &= currentDrainer.stop(timeout);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      clean = false;
    }
    startChecks.deregisterQuietly();
    if (hostExecutor == null && executor != null) {
      executor.shutdownNow();
    }
    log.info("Stopped WAL relay{}", clean ? "" : " (work in flight was interrupted)");
    return clean;
  }

  /** {@link #stop(Duration)} with 30 s. Does not close the publisher. */
  @Override
  public void close() {
    stop(OutboxRelay.DEFAULT_STOP_TIMEOUT);
  }

  /** Builder of {@link WalRelay}; not thread-safe. The shared settings: {@link RelayBuilder}. */
  public static final class Builder extends RelayBuilder<Builder> {
    private @Nullable String slotName;
    private @Nullable String publicationName;
    private @Nullable String replicationUrl;
    private Properties replicationProperties = new Properties();
    private boolean createSlot = true;
    private Duration attachRetry = DEFAULT_ATTACH_RETRY_INTERVAL;
    private Duration slotCreationTimeout = DEFAULT_SLOT_CREATION_TIMEOUT;
    private boolean failoverSlot;
    private OutboxTransport transport = OutboxTransport.ROWS;

    private Builder() {}

    /**
     * Which writers' events the reader publishes (default {@link OutboxTransport#ROWS}: inserted
     * rows only). {@link OutboxTransport#MESSAGES}: the rows and the logical decoding messages of
     * {@code Outbox.Builder.transport(MESSAGES)} writers, in one commit order (PostgreSQL 14 and
     * later); a message whose publish fails is parked as a row. {@code start()} then refuses while
     * {@code PUBLIC} may execute {@code pg_logical_emit_message}, and the relay's role needs {@code
     * INSERT} on the outbox table to park (roles/wal-messages-grants.sql, docs/wal-messages.md).
     * Switch the relays before the writers: a relay on {@code ROWS} never sees a message.
     */
    public Builder transport(OutboxTransport transport) {
      this.transport = requireNonNull(transport, "transport must not be null");
      return this;
    }

    /**
     * Whether the slot is a failover slot ({@code failover = true}; default false; PostgreSQL 17
     * and later, else the start fails saying so). A standby with {@code sync_replication_slots =
     * on}, {@code hot_standby_feedback = on}, a {@code primary_slot_name} and a {@code dbname} in
     * its {@code primary_conninfo} keeps a copy of the slot; once it is promoted, the relays resume
     * from that copy instead of falling back to the table. Set the primary's {@code
     * synchronized_standby_slots} to the standby's physical slot, and see
     * docs/wal-relay-failover.md for what else the standby must guarantee. A new slot is made one
     * at its creation; an existing slot at the next start that finds it unread.
     */
    public Builder failoverSlot(boolean failoverSlot) {
      this.failoverSlot = failoverSlot;
      return this;
    }

    /**
     * The replication slot (default {@code pgoutbox_<schema>}): lowercase letters, digits and
     * {@code _}, at most 63 characters.
     */
    public Builder slotName(String slotName) {
      this.slotName = WalNames.requireSlotName("slotName", slotName);
      return this;
    }

    /** The publication on the outbox table (default: the slot's name); same rules as slots. */
    public Builder publicationName(String publicationName) {
      this.publicationName = WalNames.requireSlotName("publicationName", publicationName);
      return this;
    }

    /**
     * Where to open the replication connection: a pgjdbc URL and its properties (user, password,
     * TLS). Derived from HikariCP ({@code setJdbcUrl}) and pgjdbc data sources when not given. The
     * relay adds {@code replication=database} and {@code preferQueryMode=simple}.
     */
    public Builder replicationConnection(String jdbcUrl, Properties properties) {
      this.replicationUrl = requireNonNull(jdbcUrl, "jdbcUrl must not be null");
      Properties copy = new Properties();
      copy.putAll(requireNonNull(properties, "properties must not be null"));
      this.replicationProperties = copy;
      return this;
    }

    /**
     * Whether {@code start()} creates a missing publication and slot (default true). Off: a missing
     * one fails the start with the SQL to run.
     */
    public Builder createSlot(boolean createSlot) {
      this.createSlot = createSlot;
      return this;
    }

    /**
     * How long {@code start()} waits to create a missing slot (default 30 s, at least 1 s, whole
     * seconds). PostgreSQL finishes a logical slot only once every transaction that was running
     * when it began has ended; one left open, or prepared and never resolved, would hold the start
     * for as long. Past this, the start fails naming those transactions, and nothing is created.
     */
    public Builder slotCreationTimeout(Duration timeout) {
      requireNonNull(timeout, "slotCreationTimeout must not be null");
      if (timeout.compareTo(Duration.ofSeconds(1)) < 0
          || timeout.compareTo(Duration.ofHours(1)) > 0) {
        throw new IllegalArgumentException(
            "slotCreationTimeout must be between 1 s and 1 h, was " + timeout);
      }
      this.slotCreationTimeout = timeout;
      return this;
    }

    /** Pause between attempts to attach while another instance streams the slot (default 1 s). */
    public Builder attachRetryInterval(Duration interval) {
      requireNonNull(interval, "attachRetryInterval must not be null");
      if (interval.compareTo(Duration.ofMillis(10)) < 0
          || interval.compareTo(Duration.ofMinutes(10)) > 0) {
        throw new IllegalArgumentException(
            "attachRetryInterval must be between 10 ms and 10 min, was " + interval);
      }
      this.attachRetry = interval;
      return this;
    }

    /**
     * The relay, not yet started.
     *
     * @throws IllegalStateException if the data source or publisher is missing, the ordering is not
     *     strict, no replication connection can be derived, or the default slot name would be too
     *     long
     */
    public WalRelay build() {
      RelaySettings settings = settings();
      if (settings.config().ordering() != Ordering.STRICT) {
        throw new IllegalStateException(
            "WalRelay needs ordering STRICT, was "
                + settings.config().ordering()
                + ": use OutboxRelay");
      }
      if (slotName == null && !WalNames.valid(WalNames.defaultName(settings.schema()))) {
        throw new IllegalStateException(
            "the default slot name pgoutbox_"
                + settings.schema()
                + " is too long: call slotName(...)");
      }
      ListenConnectionFactory connections =
          replicationUrl != null
              ? ReplicationConnections.of(replicationUrl, replicationProperties)
              : ReplicationConnections.derive(settings.dataSource());
      if (connections == null) {
        throw new IllegalStateException(
            "cannot derive a replication connection from "
                + settings.dataSource().getClass().getName()
                + ": call replicationConnection(jdbcUrl, properties)");
      }
      return new WalRelay(this, settings, connections);
    }
  }
}

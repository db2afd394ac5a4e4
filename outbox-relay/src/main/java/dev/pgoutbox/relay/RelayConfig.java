package dev.pgoutbox.relay;

import static dev.pgoutbox.relay.RelayConfigChecks.between;
import static dev.pgoutbox.relay.RelayConfigChecks.describeExponential;
import static java.util.Objects.requireNonNull;

import io.github.resilience4j.core.IntervalFunction;
import java.time.Clock;
import java.time.Duration;

/**
 * Immutable settings of an {@link OutboxRelay}, built in resilience4j's style:
 *
 * <pre>{@code
 * RelayConfig config = RelayConfig.builder()
 *     .batchSize(500)
 *     .maxAttempts(12)
 *     .backoff(IntervalFunction.ofExponentialRandomBackoff(Duration.ofSeconds(2), 2.0, 0.5, Duration.ofMinutes(30)))
 *     .build();
 * }</pre>
 *
 * Every setter checks its value at once and names the setting and its bounds when it refuses one.
 * Instances are immutable and thread-safe.
 */
public final class RelayConfig {

  /** Default {@link Builder#batchSize(int)}. */
  public static final int DEFAULT_BATCH_SIZE = 200;

  /** Largest {@link Builder#batchSize(int)}. */
  public static final int MAX_BATCH_SIZE = 10_000;

  /** Default {@link Builder#maxBatchBytes(int)}: 16 MiB. */
  public static final int DEFAULT_MAX_BATCH_BYTES = 16 * 1_048_576;

  /** Smallest {@link Builder#maxBatchBytes(int)}: 1 KiB. */
  public static final int MIN_MAX_BATCH_BYTES = 1_024;

  /** Largest {@link Builder#maxBatchBytes(int)}: 1 GiB. */
  public static final int MAX_MAX_BATCH_BYTES = 1_073_741_824;

  /** Default {@link Builder#pollInterval(Duration)}. */
  public static final Duration DEFAULT_POLL_INTERVAL = Duration.ofSeconds(1);

  /** Default {@link Builder#maxAttempts(int)}. */
  public static final int DEFAULT_MAX_ATTEMPTS = 10;

  /** Largest {@link Builder#maxAttempts(int)}. */
  public static final int MAX_MAX_ATTEMPTS = 1_000;

  /** Default initial backoff interval. */
  public static final Duration DEFAULT_BACKOFF_INITIAL = Duration.ofSeconds(1);

  /** Default backoff multiplier. */
  public static final double DEFAULT_BACKOFF_MULTIPLIER = 2.0;

  /** Default backoff jitter (randomization factor). */
  public static final double DEFAULT_BACKOFF_JITTER = 0.5;

  /** Default cap of the backoff interval. */
  public static final Duration DEFAULT_BACKOFF_MAX = Duration.ofMinutes(10);

  /** Default {@link Builder#maxRetryHint(Duration)}: the default backoff's cap. */
  public static final Duration DEFAULT_MAX_RETRY_HINT = DEFAULT_BACKOFF_MAX;

  /**
   * Longest delay the relay ever stores in {@code retry_after}, whatever the backoff function or a
   * broker's hint says; longer values are cut to it.
   */
  public static final Duration MAX_RETRY_DELAY = Duration.ofDays(7);

  /** Default {@link Builder#publishTimeout(Duration)}. */
  public static final Duration DEFAULT_PUBLISH_TIMEOUT = Duration.ofSeconds(30);

  /** Default {@link Builder#lastErrorMaxLength(int)}. */
  public static final int DEFAULT_LAST_ERROR_MAX_LENGTH = 2_000;

  /** Default {@link Builder#errorBackoffMax(Duration)}. */
  public static final Duration DEFAULT_ERROR_BACKOFF_MAX = Duration.ofSeconds(30);

  /** Default {@link Builder#metricsRefreshInterval(Duration)}. */
  public static final Duration DEFAULT_METRICS_REFRESH_INTERVAL = Duration.ofSeconds(10);

  private final int batchSize;
  private final int maxBatchBytes;
  private final Duration pollInterval;
  private final boolean listenForNotifications;
  private final int maxAttempts;
  private final IntervalFunction backoff;
  private final String backoffDescription;
  private final Duration maxRetryHint;
  private final Duration publishTimeout;
  private final Ordering ordering;
  private final DeadLetterPolicy deadLetterPolicy;
  private final Completion completion;
  private final Clock clock;
  private final int lastErrorMaxLength;
  private final Duration errorBackoffMax;
  private final Duration metricsRefreshInterval;
  private final boolean synchronousCommit;
  private final boolean batchSizeSet;
  private final boolean completionSet;

  private RelayConfig(Builder b) {
    this.batchSize = b.batchSize;
    this.maxBatchBytes = b.maxBatchBytes;
    this.pollInterval = b.pollInterval;
    this.listenForNotifications = b.listenForNotifications;
    this.maxAttempts = b.maxAttempts;
    this.backoff = b.backoff;
    this.backoffDescription = b.backoffDescription;
    this.maxRetryHint = b.maxRetryHint;
    this.publishTimeout = b.publishTimeout;
    this.ordering = b.ordering;
    this.deadLetterPolicy = b.deadLetterPolicy;
    this.completion = b.completion;
    this.clock = b.clock;
    this.lastErrorMaxLength = b.lastErrorMaxLength;
    this.errorBackoffMax = b.errorBackoffMax;
    this.metricsRefreshInterval = b.metricsRefreshInterval;
    this.synchronousCommit = b.synchronousCommit;
    this.batchSizeSet = b.batchSizeSet;
    this.completionSet = b.completionSet;
  }

  /**
   * This config with {@code batchSize} and {@code completion} set to the given defaults where the
   * builder left them unset: how a relay applies its own defaults (the WAL relay's {@code
   * WalRelay.DEFAULT_BATCH_SIZE} and {@code WalRelay.DEFAULT_COMPLETION}). Settings the host made
   * explicitly are kept.
   */
  public RelayConfig withDefaults(int defaultBatchSize, Completion defaultCompletion) {
    if (batchSizeSet && completionSet) {
      return this;
    }
    Builder b = new Builder(this);
    if (!batchSizeSet) {
      b.batchSize(defaultBatchSize);
    }
    if (!completionSet) {
      b.completion(defaultCompletion);
    }
    return b.build();
  }

  /** The defaults listed in docs/relay.md. */
  public static RelayConfig ofDefaults() {
    return builder().build();
  }

  /** A builder starting from the defaults. */
  public static Builder builder() {
    return new Builder();
  }

  /** A builder starting from {@code config}. */
  public static Builder from(RelayConfig config) {
    return new Builder(config);
  }

  /** Most events claimed, published and marked in one transaction. */
  public int batchSize() {
    return batchSize;
  }

  /**
   * Most bytes of payloads and headers claimed in one transaction (their JSON text); an event
   * larger than this goes out in a batch of its own. See {@link Builder#maxBatchBytes(int)}.
   */
  public int maxBatchBytes() {
    return maxBatchBytes;
  }

  /**
   * How often the relay looks for events when nothing woke it: the fallback behind notifications,
   * or the only trigger in poll-only mode.
   */
  public Duration pollInterval() {
    return pollInterval;
  }

  /** Whether the relay listens for the outbox trigger's notifications (false: poll-only). */
  public boolean listenForNotifications() {
    return listenForNotifications;
  }

  /** Failed attempts after which an event is dead-lettered. */
  public int maxAttempts() {
    return maxAttempts;
  }

  /** Delay before retry number {@code n}, given the number of failed attempts so far. */
  public IntervalFunction backoff() {
    return backoff;
  }

  /**
   * Longest delay a publisher's retry hint (e.g. HTTP {@code Retry-After}) can impose on an event;
   * a longer hint is cut to it. The backoff itself is cut at {@link #MAX_RETRY_DELAY}.
   */
  public Duration maxRetryHint() {
    return maxRetryHint;
  }

  /**
   * Longest time for a batch's publish, the call of {@code publish()} included. After it, answers
   * that arrived are kept, the stage is cancelled, and the first unanswered event of each aggregate
   * is charged an attempt (the events behind it wait, uncharged).
   */
  public Duration publishTimeout() {
    return publishTimeout;
  }

  /** Strict per-aggregate order, or none. */
  public Ordering ordering() {
    return ordering;
  }

  /** Whether a dead event holds back its aggregate. */
  public DeadLetterPolicy deadLetterPolicy() {
    return deadLetterPolicy;
  }

  /** Mark published rows, or delete them. */
  public Completion completion() {
    return completion;
  }

  /** The clock used for publish lag and deadlines. */
  public Clock clock() {
    return clock;
  }

  /** Longest {@code last_error} stored; longer messages are truncated. */
  public int lastErrorMaxLength() {
    return lastErrorMaxLength;
  }

  /** Cap of the relay's own backoff after database errors (it starts at 100 ms). */
  public Duration errorBackoffMax() {
    return errorBackoffMax;
  }

  /** How often gauges (pending, dead letters, lag) are refreshed from the database. */
  public Duration metricsRefreshInterval() {
    return metricsRefreshInterval;
  }

  /**
   * Whether the relay's own transactions (marks, retries) wait for their WAL to reach disk. Off by
   * default: a database crash may then forget the last marks and publish those events again, which
   * at-least-once delivery allows; events themselves are always durable (their writers commit them
   * synchronously).
   */
  public boolean synchronousCommit() {
    return synchronousCommit;
  }

  @Override
  public String toString() {
    // Every setting, in the order of docs/relay.md: start() logs this as the effective config.
    return "batchSize="
        + batchSize
        + ", maxBatchBytes="
        + maxBatchBytes
        + ", ordering="
        + ordering
        + ", pollInterval="
        + pollInterval
        + ", listenForNotifications="
        + listenForNotifications
        + ", maxAttempts="
        + maxAttempts
        + ", backoff="
        + backoffDescription
        + ", publishTimeout="
        + publishTimeout
        + ", maxRetryHint="
        + maxRetryHint
        + ", deadLetterPolicy="
        + deadLetterPolicy
        + ", completion="
        + completion
        + ", lastErrorMaxLength="
        + lastErrorMaxLength
        + ", synchronousCommit="
        + synchronousCommit
        + ", errorBackoffMax="
        + errorBackoffMax
        + ", metricsRefreshInterval="
        + metricsRefreshInterval
        + ", clock="
        + clock;
  }

  /** Builder of {@link RelayConfig}; not thread-safe. */
  public static final class Builder {
    private int batchSize = DEFAULT_BATCH_SIZE;
    private int maxBatchBytes = DEFAULT_MAX_BATCH_BYTES;
    private Duration pollInterval = DEFAULT_POLL_INTERVAL;
    private boolean listenForNotifications = true;
    private int maxAttempts = DEFAULT_MAX_ATTEMPTS;
    private IntervalFunction backoff = RelayConfigChecks.defaultBackoff();
    private String backoffDescription = RelayConfigChecks.defaultBackoffDescription();
    private Duration maxRetryHint = DEFAULT_MAX_RETRY_HINT;
    private Duration publishTimeout = DEFAULT_PUBLISH_TIMEOUT;
    private Ordering ordering = Ordering.STRICT;
    private DeadLetterPolicy deadLetterPolicy = DeadLetterPolicy.HOLD_AGGREGATE;
    private Completion completion = Completion.MARK_PROCESSED;
    private Clock clock = Clock.systemUTC();
    private int lastErrorMaxLength = DEFAULT_LAST_ERROR_MAX_LENGTH;
    private Duration errorBackoffMax = DEFAULT_ERROR_BACKOFF_MAX;
    private Duration metricsRefreshInterval = DEFAULT_METRICS_REFRESH_INTERVAL;
    private boolean synchronousCommit;
    private boolean batchSizeSet;
    private boolean completionSet;

    private Builder() {}

    private Builder(RelayConfig c) {
      batchSize = c.batchSize;
      maxBatchBytes = c.maxBatchBytes;
      pollInterval = c.pollInterval;
      listenForNotifications = c.listenForNotifications;
      maxAttempts = c.maxAttempts;
      backoff = c.backoff;
      backoffDescription = c.backoffDescription;
      maxRetryHint = c.maxRetryHint;
      publishTimeout = c.publishTimeout;
      ordering = c.ordering;
      deadLetterPolicy = c.deadLetterPolicy;
      completion = c.completion;
      clock = c.clock;
      lastErrorMaxLength = c.lastErrorMaxLength;
      errorBackoffMax = c.errorBackoffMax;
      metricsRefreshInterval = c.metricsRefreshInterval;
      synchronousCommit = c.synchronousCommit;
      batchSizeSet = c.batchSizeSet;
      completionSet = c.completionSet;
    }

    /**
     * Most events per transaction, 1 to 10,000 (default 200; {@code WalRelay}'s is {@code
     * WalRelay.DEFAULT_BATCH_SIZE}, 2,000).
     */
    public Builder batchSize(int batchSize) {
      this.batchSize = between("batchSize", batchSize, 1, MAX_BATCH_SIZE);
      this.batchSizeSet = true;
      return this;
    }

    /**
     * Most bytes of event payloads and headers (as JSON text) one batch claims, so that a backlog
     * of large events cannot exhaust the relay's heap: a batch ends at {@link #batchSize(int)}
     * events or at this many bytes, whichever comes first. An event larger than this is claimed
     * alone, in a batch of one, so it is never stuck. Default {@value
     * RelayConfig#DEFAULT_MAX_BATCH_BYTES} (16 MiB); between {@value
     * RelayConfig#MIN_MAX_BATCH_BYTES} and {@value RelayConfig#MAX_MAX_BATCH_BYTES}.
     *
     * <p>The relay holds about this much (plus one event) in text while publishing; give its heap a
     * few times that. Events up to {@code maxBatchBytes / batchSize} bytes as stored come with the
     * claim; larger ones are sized exactly by PostgreSQL and read after the claim, only those that
     * fit.
     *
     * @throws IllegalArgumentException if {@code bytes} is out of bounds
     */
    public Builder maxBatchBytes(int bytes) {
      this.maxBatchBytes =
          between("maxBatchBytes", bytes, MIN_MAX_BATCH_BYTES, MAX_MAX_BATCH_BYTES);
      return this;
    }

    /** Fallback poll interval, 1 ms to 1 hour (default 1 s). */
    public Builder pollInterval(Duration pollInterval) {
      this.pollInterval =
          between("pollInterval", pollInterval, Duration.ofMillis(1), Duration.ofHours(1));
      return this;
    }

    /**
     * Whether to LISTEN for the outbox trigger's notifications (default true). Turn it off behind
     * PgBouncer in transaction mode, or when the trigger is disabled; the relay then polls.
     */
    public Builder listenForNotifications(boolean listen) {
      this.listenForNotifications = listen;
      return this;
    }

    /** Failed attempts before dead-lettering, 1 to 1,000 (default 10). */
    public Builder maxAttempts(int maxAttempts) {
      this.maxAttempts = between("maxAttempts", maxAttempts, 1, MAX_MAX_ATTEMPTS);
      return this;
    }

    /**
     * Backoff between attempts of one event (default exponential: 1 s initial, x2, jitter 0.5,
     * capped at 10 min). The relay calls it with the number of failed attempts so far (1 after the
     * first failure) and stores {@code now() + interval} in {@code retry_after}.
     */
    public Builder backoff(IntervalFunction backoff) {
      this.backoff = requireNonNull(backoff, "backoff must not be null");
      this.backoffDescription = "custom " + backoff.getClass().getName();
      return this;
    }

    /** Exponential random backoff with these parameters (see {@link #backoff}). */
    public Builder exponentialBackoff(
        Duration initial, double multiplier, double jitter, Duration max) {
      this.backoff = RelayConfigChecks.exponentialBackoff(initial, multiplier, jitter, max);
      this.backoffDescription = describeExponential(initial, multiplier, jitter, max);
      return this;
    }

    /**
     * Longest delay a publisher's retry hint can impose, 1 ms to {@link #MAX_RETRY_DELAY} (default
     * 10 min, the default backoff's cap). Hints above it are cut to it, never refused: a broker's
     * absurd {@code Retry-After} cannot park an event for ever.
     */
    public Builder maxRetryHint(Duration max) {
      this.maxRetryHint = between("maxRetryHint", max, Duration.ofMillis(1), MAX_RETRY_DELAY);
      return this;
    }

    /** Longest wait for a batch's publish results, 1 ms to 1 hour (default 30 s). */
    public Builder publishTimeout(Duration publishTimeout) {
      this.publishTimeout =
          between("publishTimeout", publishTimeout, Duration.ofMillis(1), Duration.ofHours(1));
      return this;
    }

    /** {@link Ordering#STRICT} (default) or {@link Ordering#UNORDERED}. */
    public Builder ordering(Ordering ordering) {
      this.ordering = requireNonNull(ordering, "ordering must not be null");
      return this;
    }

    /** {@link DeadLetterPolicy#HOLD_AGGREGATE} (default) or release. */
    public Builder deadLetterPolicy(DeadLetterPolicy policy) {
      this.deadLetterPolicy = requireNonNull(policy, "deadLetterPolicy must not be null");
      return this;
    }

    /**
     * {@link Completion#MARK_PROCESSED} (default) or {@link Completion#DELETE} ({@code WalRelay}'s
     * default: see {@code WalRelay#DEFAULT_COMPLETION}).
     */
    public Builder completion(Completion completion) {
      this.completion = requireNonNull(completion, "completion must not be null");
      this.completionSet = true;
      return this;
    }

    /** The clock for publish lag and deadlines (default: system UTC). */
    public Builder clock(Clock clock) {
      this.clock = requireNonNull(clock, "clock must not be null");
      return this;
    }

    /** Longest stored {@code last_error}, 64 to 100,000 characters (default 2,000). */
    public Builder lastErrorMaxLength(int length) {
      this.lastErrorMaxLength = between("lastErrorMaxLength", length, 64, 100_000);
      return this;
    }

    /** Cap of the backoff after database errors, 100 ms to 1 hour (default 30 s). */
    public Builder errorBackoffMax(Duration max) {
      this.errorBackoffMax =
          between("errorBackoffMax", max, Duration.ofMillis(100), Duration.ofHours(1));
      return this;
    }

    /** Refresh interval of the database-backed gauges, 100 ms to 1 hour (default 10 s). */
    public Builder metricsRefreshInterval(Duration interval) {
      this.metricsRefreshInterval =
          between("metricsRefreshInterval", interval, Duration.ofMillis(100), Duration.ofHours(1));
      return this;
    }

    /**
     * Whether the relay's transactions wait for their WAL to reach disk (default false; see {@link
     * RelayConfig#synchronousCommit()}).
     */
    public Builder synchronousCommit(boolean synchronousCommit) {
      this.synchronousCommit = synchronousCommit;
      return this;
    }

    /** The immutable configuration. Each setting was checked when it was set. */
    public RelayConfig build() {
      return new RelayConfig(this);
    }
  }
}

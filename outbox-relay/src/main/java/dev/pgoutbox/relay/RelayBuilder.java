package dev.pgoutbox.relay;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.internal.RelaySettings;
import java.util.concurrent.ScheduledExecutorService;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * The settings {@link OutboxRelay.Builder} and {@code WalRelay.Builder} share: what both relays
 * read, publish to, report to and run on. Not thread-safe.
 *
 * @param <B> the concrete builder, returned by every setter for chaining
 */
public abstract class RelayBuilder<B extends RelayBuilder<B>> {

  String name = "default";
  DataSource dataSource;
  String schema = OutboxSchema.DEFAULT_SCHEMA;
  Publisher publisher;
  RelayConfig config = RelayConfig.ofDefaults();
  RelayListener listener = RelayListener.NONE;
  @Nullable PublishTracing tracing;
  @Nullable ScheduledExecutorService executor;

  /** For the relays' own builders ({@link OutboxRelay.Builder}, the WAL relay's). */
  protected RelayBuilder() {}

  /**
   * The relay's name in logs ({@code pgoutbox-relay[name]}), metric tags and {@code
   * application_name}: letters, digits, '.', '_', '-', at most {@value OutboxRelay#MAX_NAME_LENGTH}
   * characters (default {@code default}).
   */
  public B name(String name) {
    this.name = OutboxRelay.requireValidName(name);
    return self();
  }

  /**
   * The host's data source (e.g. HikariCP): batches, completions and the relay registry borrow
   * connections from it. Required.
   */
  public B dataSource(DataSource dataSource) {
    this.dataSource = requireNonNull(dataSource, "dataSource must not be null");
    return self();
  }

  /** The schema holding the outbox tables (default {@code public}). */
  public B schema(String schema) {
    this.schema = OutboxSchema.requireValidName(schema);
    return self();
  }

  /** Where events go. Required. The relay never closes it: the host does. */
  public B publisher(Publisher publisher) {
    this.publisher = requireNonNull(publisher, "publisher must not be null");
    return self();
  }

  /**
   * Settings (default {@link RelayConfig#ofDefaults()}); a {@code WalRelay} needs ordering {@code
   * STRICT}.
   */
  public B config(RelayConfig config) {
    this.config = requireNonNull(config, "config must not be null");
    return self();
  }

  /** Hears batches, publishes, failures, stats and a WAL relay's slot lag (metrics, tests). */
  public B listener(RelayListener listener) {
    this.listener = requireNonNull(listener, "listener must not be null");
    return self();
  }

  /**
   * How publishes are traced: {@code OpenTelemetryTracing.create(openTelemetry)} (package {@code
   * dev.pgoutbox.relay.otel}) for one PRODUCER span per event, {@code
   * ObservationTracing.builder(observationRegistry).tracer(tracer).build()} (package {@code
   * dev.pgoutbox.relay.micrometer}) for the same through Micrometer's Observation API, or {@link
   * PublishTracing#NONE}. Default: the first {@link AutomaticTracing} on the class path that
   * answers; with pgoutbox-opentelemetry that is OpenTelemetry tracing with the global instance
   * when {@code GlobalOpenTelemetry} is set when {@code build()} runs (the Java agent sets it; an
   * API before 1.57 cannot tell, so none), otherwise none. Without tracing, the {@code traceparent}
   * the writer stored still reaches the consumer as it was.
   */
  public B tracing(PublishTracing tracing) {
    this.tracing = requireNonNull(tracing, "tracing must not be null");
    return self();
  }

  /**
   * The host's executor to run on (virtual threads welcome). Without one, the relay creates its
   * own: a single thread for an {@link OutboxRelay}; three for a {@code WalRelay}, whose reader,
   * completer and drainer each run as a chain of short tasks.
   */
  public B executor(ScheduledExecutorService executor) {
    this.executor = requireNonNull(executor, "executor must not be null");
    return self();
  }

  /**
   * The settings given, for the relay being built.
   *
   * @throws IllegalStateException if the data source or the publisher is missing
   */
  protected final RelaySettings settings() {
    requireDataSourceAndPublisher();
    return new RelaySettings(
        name, dataSource, schema, publisher, config, listener, tracing, executor);
  }

  /** Fails the build when a required setting is missing. */
  final void requireDataSourceAndPublisher() {
    if (dataSource == null) {
      throw new IllegalStateException("dataSource is required: call dataSource(...)");
    }
    if (publisher == null) {
      throw new IllegalStateException("publisher is required: call publisher(...)");
    }
  }

  @SuppressWarnings("unchecked") // B is the subclass itself
  private B self() {
    return (B) this;
  }
}

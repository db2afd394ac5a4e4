package dev.pgoutbox.relay.nats;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.core.consumer.HeaderValues;
import dev.pgoutbox.core.consumer.NatsCloudEvents;
import dev.pgoutbox.core.consumer.NatsEventIds;
import dev.pgoutbox.core.consumer.NatsHeaders;
import dev.pgoutbox.relay.AggregateSequencer;
import dev.pgoutbox.relay.CloudEvents;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.PublisherSupport;
import dev.pgoutbox.relay.SpanAttributes;
import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamOptions;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.PublishOptions;
import io.nats.client.api.PublishAck;
import io.nats.client.impl.Headers;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import org.jspecify.annotations.Nullable;

/**
 * Publishes outbox events to NATS JetStream with acknowledgements.
 *
 * <pre>{@code
 * Options options = new Options.Builder().server("nats://nats.internal:4222").maxReconnects(-1).build();
 * try (NatsPublisher nats = NatsPublisher.builder(options).build()) {
 *   // hand it to the relay; subjects outbox.<aggregate_type>.<event_type>,
 *   // captured by a stream on "outbox.>" with a duplicate window
 * }
 * }</pre>
 *
 * <p><b>The message.</b> Subject from {@link NatsRouting} (default {@code
 * outbox.<aggregate_type>.<event_type>}), data = the payload JSON as stored, headers {@value
 * NatsEventIds#HEADER} = event id, {@value #EVENT_TYPE_HEADER}, {@value #AGGREGATE_TYPE_HEADER},
 * {@value #AGGREGATE_ID_HEADER} and every stored header (e.g. {@code traceparent}). NATS header
 * values are printable US-ASCII; the writer accepts any text, so a value that is not plain ASCII
 * (non-ASCII, control characters, CR, LF, a leading or trailing space) is sent under its name
 * followed by {@code *} as an RFC 8187 ext-value, {@code aggregate_id*: UTF-8''Z%C3%BCrich}, and
 * read back with {@link NatsHeaders#get}. Nothing the writer accepts is refused or changed.
 *
 * <p><b>Deduplication.</b> JetStream drops a message whose {@code Nats-Msg-Id} it has already
 * stored within the stream's duplicate window ({@code duplicate_window}, 2 minutes by default);
 * such a publish is acknowledged as a duplicate and answered published. A redelivery later than the
 * window (a relay down longer than that between the broker's ack and its commit) is stored again:
 * size the window to your outage budget and let consumers dedup with {@link NatsEventIds} and the
 * inbox.
 *
 * <p><b>Pipelining and order.</b> The batch is published with {@code publishAsync} on one
 * connection, without waiting; a connection delivers in order, and a stream stores in arrival
 * order, so an aggregate's events are stored in order. Each ack is awaited at most {@link
 * Builder#ackTimeout}. An event refused at once (too large for the server) holds back the later
 * events of its aggregate in the batch (answered retryable, not sent); a closed connection stops
 * the rest of the batch.
 *
 * <p><b>Failures.</b> Permanent: a payload larger than the server's {@code max_payload}, a message
 * larger than the stream's maximum (API error {@value #MESSAGE_TOO_LARGE}), a subject that is not
 * literal (checked before the publish: empty, an empty token, {@code *} or {@code >} anywhere,
 * whitespace or a control character; the default routing escapes such characters, so only a routing
 * of your own can give one), an invalid header. Retryable: no ack in time (server down or
 * restarting; jnats resends buffered messages on reconnect, and the duplicate window absorbs them),
 * connection closed, {@code 503 no responders} (no stream captures the subject, or JetStream is not
 * ready yet: indistinguishable on the wire), any other JetStream error.
 *
 * <p>Thread-safe. Given a connection, the publisher never closes it. Given {@link Options}, it
 * connects lazily (on the first batch), connects again if the connection has closed for good, and
 * closes its connection in {@link #close()}. It also replaces its connection when not one message
 * of a batch was acknowledged while the connection reported itself connected (a reply subscription
 * lost in a reconnect was seen to do that); a host's connection is the host's to watch.
 */
public final class NatsPublisher implements Publisher {

  /** The header that carries the event type: {@value}. */
  public static final String EVENT_TYPE_HEADER = "event_type";

  /** The header that carries the aggregate type: {@value}. */
  public static final String AGGREGATE_TYPE_HEADER = "aggregate_type";

  /** The header that carries the aggregate id: {@value}. */
  public static final String AGGREGATE_ID_HEADER = "aggregate_id";

  /** How long to wait for JetStream's ack of one message, by default: 10 seconds. */
  public static final Duration DEFAULT_ACK_TIMEOUT = Duration.ofSeconds(10);

  /** JetStream's API error code for "message size exceeds maximum allowed": {@value}. */
  public static final int MESSAGE_TOO_LARGE = 10054;

  private static final Set<Integer> PERMANENT_API_ERRORS = Set.of(MESSAGE_TOO_LARGE);

  private final @Nullable Connection hostConnection;
  private final @Nullable Options options;
  private final NatsRouting routing;
  private final Duration ackTimeout;
  private final @Nullable JetStreamOptions jetStreamOptions;
  private final @Nullable CloudEvents cloudEvents;
  private final ReentrantLock lock = new ReentrantLock();
  private volatile @Nullable Connection ownConnection;
  private volatile @Nullable JetStream jetStream;
  private volatile @Nullable Connection jetStreamOf;
  private volatile @Nullable Connection suspect;
  private final AggregateSequencer sequencer = AggregateSequencer.ofDefaults();

  private NatsPublisher(Builder b) {
    this.hostConnection = b.connection;
    this.options = b.options;
    this.routing = b.routing;
    this.ackTimeout = b.ackTimeout;
    this.jetStreamOptions = b.jetStreamOptions;
    this.cloudEvents = b.cloudEvents;
  }

  /** A builder for a publisher on the host's {@code connection}, which it never closes. */
  public static Builder builder(Connection connection) {
    return new Builder(requireNonNull(connection, "connection"), null);
  }

  /**
   * A builder for a publisher that opens (and closes) its own connection with {@code options}. Give
   * the options {@code maxReconnects(-1)} so that the connection rides out server restarts. The
   * publisher turns the reconnect buffer off ({@code reconnectBufferSize(0)}): a message buffered
   * during a reconnect can overtake an earlier one lost with the old connection. A connection you
   * pass to {@link #builder(Connection)} should be configured the same way.
   */
  public static Builder builder(Options options) {
    return new Builder(null, requireNonNull(options, "options"));
  }

  @Override
  public CompletionStage<List<PublishResult>> publish(List<OutboxMessage> batch) {
    JetStream js;
    try {
      js = jetStream();
    } catch (IOException | RuntimeException e) {
      return allRetryable(batch, "NATS unreachable: " + e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return allRetryable(batch, "interrupted while connecting to NATS");
    }
    Connection connection = jetStreamOf;
    // One event of an aggregate in flight at a time (the sequencer): the server can refuse event
    // N (no responders while JetStream restarts, a timeout) and store N+1 sent right behind it, so
    // N+1 is sent only once N is acknowledged. Different aggregates still go out concurrently.
    BatchState state = new BatchState(connection);
    return sequencer.publish(batch, m -> send(js, m, state));
  }

  /** {@code nats}. */
  @Override
  public String messagingSystem() {
    return "nats";
  }

  /**
   * {@code server.address} and {@code server.port} of the server the connection is on (or, before
   * it connects, the first server of its options).
   */
  @Override
  public Map<String, Object> traceAttributes(OutboxMessage message) {
    Connection c = hostConnection != null ? hostConnection : ownConnection;
    String url = c == null ? null : c.getConnectedUrl();
    if (url == null && options != null && !options.getServers().isEmpty()) {
      url = options.getServers().get(0).toString();
    }
    if (url == null) {
      return Map.of();
    }
    try {
      URI uri = URI.create(url);
      return SpanAttributes.server(uri.getHost(), uri.getPort());
    } catch (IllegalArgumentException e) {
      return Map.of();
    }
  }

  /** The event's subject, or null when the routing throws. */
  @Override
  public @Nullable String destination(OutboxMessage message) {
    try {
      return routing.subject(message);
    } catch (RuntimeException e) {
      return null;
    }
  }

  /** What one batch shares: the connection, counters for the suspect check, the stop reason. */
  private static final class BatchState {
    final @Nullable Connection connection;
    final AtomicInteger sent = new AtomicInteger();
    final AtomicInteger inFlight = new AtomicInteger();
    final AtomicInteger timedOut = new AtomicInteger();
    final AtomicReference<@Nullable String> stopBatch = new AtomicReference<>();

    BatchState(@Nullable Connection connection) {
      this.connection = connection;
    }
  }

  /** Sends one event; the stage always completes normally, with the event's result. */
  private CompletableFuture<PublishResult> send(JetStream js, OutboxMessage m, BatchState state) {
    String stopped = state.stopBatch.get();
    if (stopped != null) {
      return CompletableFuture.completedFuture(PublishResult.retryable(stopped));
    }
    String subject = "?";
    Headers headers;
    byte[] data;
    try {
      subject = requireNonNull(routing.subject(m), "routing returned null");
      headers = headers(m);
      data = data(m);
    } catch (RuntimeException e) {
      return CompletableFuture.completedFuture(
          PublishResult.permanent(
              "cannot build the NATS message for subject " + subject + ": " + e));
    }
    // jnats passes "a.*" and "a.>" to the server, and whitespace other than space, tab, CR, LF.
    String problem = NatsSubjects.problem(subject);
    if (problem != null) {
      return CompletableFuture.completedFuture(
          PublishResult.permanent(
              "NATS routing gave subject '"
                  + subject
                  + "' for event_type '"
                  + m.eventType()
                  + "', aggregate_type '"
                  + m.aggregateType()
                  + "', which is not a literal subject: "
                  + problem));
    }
    CompletableFuture<PublishAck> ack;
    try {
      ack =
          js.publishAsync(
              subject,
              headers,
              data,
              PublishOptions.builder().messageId(m.id().toString()).build());
    } catch (IllegalArgumentException | NullPointerException e) {
      return CompletableFuture.completedFuture(
          PublishResult.permanent("NATS subject " + subject + ": " + e.getMessage()));
    } catch (RuntimeException e) {
      String reason = "NATS publish to " + subject + " failed: " + e;
      state.stopBatch.compareAndSet(null, reason);
      return CompletableFuture.completedFuture(PublishResult.retryable(reason));
    }
    String s = subject;
    state.sent.incrementAndGet();
    state.inFlight.incrementAndGet();
    return ack.orTimeout(ackTimeout.toMillis(), TimeUnit.MILLISECONDS)
        .handle(
            (a, e) -> {
              if (e != null && PublisherSupport.unwrap(e) instanceof TimeoutException) {
                state.timedOut.incrementAndGet();
              }
              if (state.inFlight.decrementAndGet() == 0) {
                suspectIfNoAck(state);
              }
              return e == null ? PublishResult.published() : classify(e, s);
            });
  }

  /**
   * Connected, yet not one ack came back: the reply subscription may not have survived a reconnect,
   * so the next batch starts on a fresh connection. Checked before the last answer reaches the
   * sequencer, hence before the relay can start the next batch.
   */
  private void suspectIfNoAck(BatchState state) {
    Connection connection = state.connection;
    if (connection != null
        && connection == ownConnection
        && state.sent.get() > 0
        && state.timedOut.get() == state.sent.get()
        && connection.getStatus() == Connection.Status.CONNECTED) {
      suspect = connection;
    }
  }

  /** Closes the connection if this publisher opened it. */
  @Override
  public void close() {
    lock.lock();
    try {
      Connection own = ownConnection;
      ownConnection = null;
      jetStream = null;
      jetStreamOf = null;
      if (own != null) {
        try {
          own.close();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    } finally {
      lock.unlock();
    }
  }

  private JetStream jetStream() throws IOException, InterruptedException {
    lock.lock();
    try {
      Connection connection = hostConnection;
      if (connection == null) {
        Connection own = ownConnection;
        if (own != null && own == suspect) {
          suspect = null;
          ownConnection = null;
          own.close();
          own = null;
        }
        if (own == null || own.getStatus() == Connection.Status.CLOSED) {
          // No reconnect buffer: messages published while reconnecting would reach the server
          // ahead of earlier ones lost with the old socket, breaking per-aggregate order. Without
          // it they fail at once and are retried in order.
          own =
              Nats.connect(
                  new Options.Builder(requireNonNull(options)).reconnectBufferSize(0).build());
          ownConnection = own;
        }
        connection = own;
      }
      JetStream js = jetStream;
      if (js == null || jetStreamOf != connection) {
        js =
            jetStreamOptions == null
                ? connection.jetStream()
                : connection.jetStream(jetStreamOptions);
        jetStream = js;
        jetStreamOf = connection;
      }
      return js;
    } finally {
      lock.unlock();
    }
  }

  private static CompletableFuture<List<PublishResult>> allRetryable(
      List<OutboxMessage> batch, String reason) {
    return CompletableFuture.completedFuture(
        Collections.nCopies(batch.size(), PublishResult.retryable(reason)));
  }

  /**
   * The message's headers: the stored ones (but any named like one of the envelope's, from a row
   * written before the writer refused such names: the envelope's wins), then the envelope's; every
   * value that is not plain ASCII under its name followed by {@code *}, RFC 8187-encoded ({@link
   * NatsHeaders}). Binary-mode CloudEvents attributes are percent-encoded as the binding's draft
   * says.
   */
  private Headers headers(OutboxMessage m) {
    Headers h = new Headers();
    m.headers()
        .forEach(
            (name, value) -> {
              if (!PublisherSupport.isReservedHeader(name)) {
                NatsHeaders.put(h, name, value);
              }
            });
    NatsHeaders.put(h, EVENT_TYPE_HEADER, m.eventType());
    NatsHeaders.put(h, AGGREGATE_TYPE_HEADER, m.aggregateType());
    NatsHeaders.put(h, AGGREGATE_ID_HEADER, m.aggregateId());
    CloudEvents ce = cloudEvents;
    if (ce != null && ce.isStructured()) {
      h.put(NatsCloudEvents.CONTENT_TYPE, NatsCloudEvents.STRUCTURED_CONTENT_TYPE);
    } else if (ce != null) {
      ce.attributes(m)
          .forEach(
              (name, value) ->
                  h.put(NatsCloudEvents.PREFIX + name, HeaderValues.percentEncode(value)));
      h.put(
          NatsCloudEvents.PREFIX + "datacontenttype",
          HeaderValues.percentEncode(CloudEvents.DATA_CONTENT_TYPE));
    }
    return h;
  }

  /** The message's data: the payload as stored, or the structured CloudEvent around it. */
  private byte[] data(OutboxMessage m) {
    CloudEvents ce = cloudEvents;
    return ce != null && ce.isStructured()
        ? ce.structuredBody(m).getBytes(StandardCharsets.UTF_8)
        : m.payloadBytes();
  }

  /** Classifies a failed publish ack. */
  static PublishResult classify(Throwable error, String subject) {
    Throwable e = PublisherSupport.unwrap(error);
    // jnats wraps the API error of a failed ack in a RuntimeException.
    for (Throwable c = e; c != null; c = c.getCause()) {
      if (c instanceof JetStreamApiException) {
        e = c;
        break;
      }
    }
    if (e instanceof TimeoutException) {
      return PublishResult.retryable("no JetStream ack for subject " + subject + " in time");
    }
    if (e instanceof JetStreamApiException api) {
      String reason =
          "JetStream refused subject "
              + subject
              + ": "
              + api.getErrorDescription()
              + " (code "
              + api.getErrorCode()
              + ", api error "
              + api.getApiErrorCode()
              + ")";
      return PERMANENT_API_ERRORS.contains(api.getApiErrorCode())
          ? PublishResult.permanent(reason)
          : PublishResult.retryable(reason);
    }
    return PublishResult.retryable("NATS publish to " + subject + " failed: " + e);
  }

  /** Settings of a {@link NatsPublisher}. Not thread-safe. */
  public static final class Builder {
    private final @Nullable Connection connection;
    private final @Nullable Options options;
    private NatsRouting routing = NatsRouting.byTypes("outbox");
    private Duration ackTimeout = DEFAULT_ACK_TIMEOUT;
    private @Nullable JetStreamOptions jetStreamOptions;
    private @Nullable CloudEvents cloudEvents;

    private Builder(@Nullable Connection connection, @Nullable Options options) {
      this.connection = connection;
      this.options = options;
    }

    /**
     * How events are routed to subjects. Default {@link NatsRouting#byTypes} {@code ("outbox")}.
     */
    public Builder routing(NatsRouting routing) {
      this.routing = requireNonNull(routing, "routing");
      return this;
    }

    /**
     * How long to wait for one message's JetStream ack before answering it retryable. Between 1 ms
     * and 10 minutes, default {@link #DEFAULT_ACK_TIMEOUT}.
     */
    public Builder ackTimeout(Duration timeout) {
      requireNonNull(timeout, "ackTimeout");
      if (timeout.toMillis() < 1 || timeout.compareTo(Duration.ofMinutes(10)) > 0) {
        throw new IllegalArgumentException(
            "ackTimeout must be between 1ms and 10 minutes, was " + timeout);
      }
      this.ackTimeout = timeout;
      return this;
    }

    /** JetStream options (domain, API prefix). Default: the connection's plain JetStream. */
    public Builder jetStreamOptions(JetStreamOptions options) {
      this.jetStreamOptions = requireNonNull(options, "jetStreamOptions");
      return this;
    }

    /**
     * Sends each event as a CloudEvent (see {@link CloudEvents}), read back with {@link
     * NatsCloudEvents}. {@link CloudEvents#structured} is the mode of the released NATS binding
     * (v1.0.2) and the one to choose: the data is the event in the JSON event format, the payload
     * under {@code data}, with header {@code Content-Type: application/cloudevents+json}. {@link
     * CloudEvents#binary} follows the binding's draft text (1.0.3-wip, not yet released): headers
     * {@code ce-id}, {@code ce-source}, {@code ce-specversion}, {@code ce-type}, {@code
     * ce-subject}, {@code ce-time} and {@code ce-datacontenttype}, each value percent-encoded
     * (§3.1.3.2), the data the payload as stored. Either way pgoutbox's own headers are sent as
     * well. Default: none.
     */
    public Builder cloudEvents(CloudEvents cloudEvents) {
      this.cloudEvents = requireNonNull(cloudEvents, "cloudEvents");
      return this;
    }

    /** A publisher with these settings; connects lazily, on the first batch. */
    public NatsPublisher build() {
      return new NatsPublisher(this);
    }
  }
}

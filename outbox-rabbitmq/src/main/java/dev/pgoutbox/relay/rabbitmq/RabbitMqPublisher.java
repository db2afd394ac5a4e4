package dev.pgoutbox.relay.rabbitmq;

import static java.util.Objects.requireNonNull;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.AlreadyClosedException;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.ShutdownSignalException;
import dev.pgoutbox.core.consumer.RabbitMqCloudEvents;
import dev.pgoutbox.core.consumer.RabbitMqEventIds;
import dev.pgoutbox.relay.AggregateSequencer;
import dev.pgoutbox.relay.CloudEvents;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.PublisherSupport;
import dev.pgoutbox.relay.SpanAttributes;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Date;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentNavigableMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import org.jspecify.annotations.Nullable;

/**
 * Publishes outbox events to RabbitMQ with publisher confirms.
 *
 * <pre>{@code
 * ConnectionFactory factory = new ConnectionFactory();
 * factory.setHost("rabbit.internal");
 * try (RabbitMqPublisher rabbit =
 *     RabbitMqPublisher.builder(factory, RabbitMqRouting.byEventType("orders")).build()) {
 *   // hand it to the relay
 * }
 * }</pre>
 *
 * <p><b>The message.</b> Exchange and routing key from {@link RabbitMqRouting} (e.g. exchange
 * {@code orders}, routing key = event type), body = the payload JSON as stored, properties {@code
 * message-id} = event id (the consumer's dedup key, read back with {@link RabbitMqEventIds}),
 * {@code delivery-mode} 2 (persistent), {@code content-type application/json}, {@code type} = event
 * type (left out when the event type is longer than an AMQP short string, {@value
 * #MAX_SHORT_STRING} bytes in UTF-8: the {@value #EVENT_TYPE_HEADER} header always carries it),
 * {@code timestamp} = creation time, and headers {@value #EVENT_TYPE_HEADER}, {@value
 * #AGGREGATE_TYPE_HEADER}, {@value #AGGREGATE_ID_HEADER} and every stored header (e.g. {@code
 * traceparent}) under its own name, all AMQP long strings (UTF-8, any text). Published with {@code
 * mandatory=true}.
 *
 * <p><b>Pipelining and order.</b> The publisher uses one channel in confirm mode, and sends through
 * {@link AggregateSequencer}: the first event of every aggregate in the batch goes out at once, and
 * an aggregate's next event only once the broker confirmed the one before it (a routing failure, a
 * return or a nack of event N keeps N+1 from being sent: it is answered retryable, "held back").
 * RabbitMQ keeps a channel's order into each queue, so with a routing that sends one aggregate to
 * one queue a consumer of that queue sees an aggregate's events in order. Confirms (often one for
 * many messages) complete the results asynchronously, each within {@link Builder#confirmTimeout}.
 * Messages are published from one thread the publisher owns ({@code pgoutbox-rabbitmq-publisher}),
 * never from the connection's I/O thread, so {@code publish} returns at once and the relay's
 * publish timeout bounds a broker that blocks publishers (resource alarm).
 *
 * <p><b>Failures.</b> Permanent, for that event alone: the routing threw; a short string over
 * {@value #MAX_SHORT_STRING} bytes (exchange, routing key, e.g. an event type of more than 63
 * characters outside ASCII with {@link RabbitMqRouting#byEventType}, a header name), checked before
 * {@code basicPublish}; anything else {@code basicPublish} refuses to encode; unroutable (returned
 * under {@code mandatory}: no queue bound for the routing key), with the exchange, key and reply
 * text. Retryable: broker unreachable (the rest of the batch is then answered retryable without
 * trying), connection or channel closed, nack (e.g. a queue with {@code x-overflow=reject-publish}
 * that is full), no confirm within the timeout. Any exception out of {@code basicPublish} leaves
 * the channel's confirm numbering unknown (the client counts the sequence number before it encodes
 * the frame): the publisher closes that channel, answers its unconfirmed messages retryable, and
 * goes on with a fresh channel. A channel-level error such as an unknown exchange or {@code
 * ACCESS_REFUSED} closes the channel and cannot be pinned to one message: the events in flight are
 * answered retryable with the broker's reason (the relay dead-letters them after its maximum
 * attempts), and the next event opens a new channel.
 *
 * <p><b>Threads.</b> An AMQP channel must not be used by two threads at once; this publisher owns
 * its channel and guards it with a lock, so it is thread-safe. Given a connection, it opens its own
 * channel on it and closes only that channel. Given a {@link ConnectionFactory}, it opens (and
 * closes) its own connection from a copy of the factory with automatic recovery off, and opens a
 * new one on the next batch after a failure.
 */
public final class RabbitMqPublisher implements Publisher {

  /** The header that carries the event type: {@value}. */
  public static final String EVENT_TYPE_HEADER = "event_type";

  /** The header that carries the aggregate type: {@value}. */
  public static final String AGGREGATE_TYPE_HEADER = "aggregate_type";

  /** The header that carries the aggregate id: {@value}. */
  public static final String AGGREGATE_ID_HEADER = "aggregate_id";

  /** The longest AMQP short string, in bytes: {@value}. */
  public static final int MAX_SHORT_STRING = 255;

  /** How long to wait for a publisher confirm, by default: 30 seconds. */
  public static final Duration DEFAULT_CONFIRM_TIMEOUT = Duration.ofSeconds(30);

  private final @Nullable Connection hostConnection;
  private final @Nullable ConnectionFactory factory;
  private final RabbitMqRouting routing;
  private final Duration confirmTimeout;
  private final ReentrantLock lock = new ReentrantLock();
  private final ExecutorService sender;
  private final AggregateSequencer sequencer;
  private final @Nullable CloudEvents cloudEvents;
  private final Map<String, Object> server;
  private @Nullable Connection ownConnection;
  private @Nullable ConfirmChannel current;
  private volatile boolean closed;

  private RabbitMqPublisher(Builder b) {
    this.hostConnection = b.connection;
    ConnectionFactory f = b.factory;
    if (f != null) {
      f = f.clone();
      f.setAutomaticRecoveryEnabled(false);
      f.setTopologyRecoveryEnabled(false);
    }
    this.factory = f;
    Connection c = b.connection;
    this.server =
        c != null
            ? SpanAttributes.server(c.getAddress().getHostAddress(), c.getPort())
            : f != null ? SpanAttributes.server(f.getHost(), f.getPort()) : Map.of();
    this.routing = b.routing;
    this.confirmTimeout = b.confirmTimeout;
    this.cloudEvents = b.cloudEvents;
    this.sender =
        Executors.newSingleThreadExecutor(
            r -> {
              Thread t = new Thread(r, "pgoutbox-rabbitmq-publisher");
              t.setDaemon(true);
              return t;
            });
    this.sequencer = AggregateSequencer.builder().executor(sender).build();
  }

  /**
   * A builder for a publisher that opens its own channel on the host's {@code connection}; the
   * connection stays the host's.
   */
  public static Builder builder(Connection connection, RabbitMqRouting routing) {
    return new Builder(requireNonNull(connection, "connection"), null, routing);
  }

  /**
   * A builder for a publisher that opens (and closes) its own connection with a copy of {@code
   * factory}; connections are opened lazily, on the first batch, and again after a failure.
   */
  public static Builder builder(ConnectionFactory factory, RabbitMqRouting routing) {
    return new Builder(null, requireNonNull(factory, "factory"), routing);
  }

  @Override
  public CompletionStage<List<PublishResult>> publish(List<OutboxMessage> batch) {
    if (closed) {
      throw new IllegalStateException("RabbitMqPublisher is closed");
    }
    AtomicReference<@Nullable String> down = new AtomicReference<>();
    return sequencer.publish(batch, m -> send(m, down));
  }

  /** {@code rabbitmq}. */
  @Override
  public String messagingSystem() {
    return "rabbitmq";
  }

  /**
   * {@code messaging.rabbitmq.destination.routing_key} (when not empty) and the broker's {@code
   * server.address} and {@code server.port} (the factory's host and port, or the host connection's
   * peer).
   */
  @Override
  public Map<String, Object> traceAttributes(OutboxMessage message) {
    Map<String, Object> attributes = new LinkedHashMap<>(server);
    try {
      String key = routing.route(message).routingKey();
      if (!key.isEmpty()) {
        attributes.put(SpanAttributes.RABBITMQ_ROUTING_KEY, key);
      }
    } catch (RuntimeException e) {
      // No route, no routing key: the publish answers the failure.
    }
    return attributes;
  }

  /**
   * The event's exchange ({@code amq.default} for the default exchange), or null when the routing
   * throws.
   */
  @Override
  public @Nullable String destination(OutboxMessage message) {
    try {
      String exchange = routing.route(message).exchange();
      return exchange.isEmpty() ? "amq.default" : exchange;
    } catch (RuntimeException e) {
      return null;
    }
  }

  /** Sends one event, on the sender thread; {@code down} stops the batch after an outage. */
  private CompletableFuture<PublishResult> send(
      OutboxMessage m, AtomicReference<@Nullable String> down) {
    String unreachable = down.get();
    if (unreachable != null) {
      return CompletableFuture.completedFuture(PublishResult.retryable(unreachable));
    }
    RabbitMqRoute route;
    AMQP.BasicProperties properties;
    byte[] body;
    try {
      route = requireNonNull(routing.route(m), "routing returned null");
      properties = properties(m);
      String unencodable = unencodable(route, properties);
      if (unencodable != null) {
        return CompletableFuture.completedFuture(
            PublishResult.permanent("cannot encode the AMQP message: " + unencodable));
      }
      body = m.payloadBytes();
    } catch (RuntimeException e) {
      return CompletableFuture.completedFuture(
          PublishResult.permanent("cannot build the AMQP message: " + e));
    }
    lock.lock();
    try {
      if (closed) {
        return CompletableFuture.completedFuture(
            PublishResult.retryable("not sent: the RabbitMQ publisher was closed"));
      }
      ConfirmChannel ch;
      try {
        ch = channel();
      } catch (IOException | TimeoutException | RuntimeException e) {
        String reason = "RabbitMQ unreachable: " + e;
        down.compareAndSet(null, reason);
        return CompletableFuture.completedFuture(PublishResult.retryable(reason));
      }
      Pending pending = new Pending(m.id().toString(), route);
      long seq = ch.channel.getNextPublishSeqNo();
      ch.outstanding.put(seq, pending);
      try {
        ch.channel.basicPublish(route.exchange(), route.routingKey(), true, properties, body);
      } catch (IOException | RuntimeException e) {
        ch.outstanding.remove(seq);
        // basicPublish counts the confirm sequence number before it writes the frame: after any
        // exception the channel's numbering is unknown, so it is never used again.
        abandon(ch);
        pending.complete(
            e instanceof IllegalArgumentException
                ? PublishResult.permanent("cannot encode the AMQP message: " + e.getMessage())
                : PublishResult.retryable(
                    "RabbitMQ channel failed while publishing: " + e.getMessage()));
        return pending;
      }
      return pending.completeOnTimeout(
          PublishResult.retryable("no publisher confirm from RabbitMQ within " + confirmTimeout),
          confirmTimeout.toMillis(),
          TimeUnit.MILLISECONDS);
    } finally {
      lock.unlock();
    }
  }

  /**
   * Why the message cannot be encoded (a short string over {@value #MAX_SHORT_STRING} bytes), or
   * null. Checked before {@code basicPublish}, which would throw half-way through.
   */
  static @Nullable String unencodable(RabbitMqRoute route, AMQP.BasicProperties properties) {
    String problem = tooLong("exchange name", route.exchange());
    if (problem == null) {
      problem = tooLong("routing key", route.routingKey());
    }
    if (problem == null) {
      problem = tooLong("message-id", properties.getMessageId());
    }
    if (problem == null) {
      problem = tooLong("content-type", properties.getContentType());
    }
    Map<String, Object> headers = properties.getHeaders();
    if (problem == null && headers != null) {
      for (String name : headers.keySet()) {
        problem = tooLong("header name", name);
        if (problem != null) {
          break;
        }
      }
    }
    return problem;
  }

  /** Whether {@code value} fits an AMQP short string. */
  private static boolean fitsShortString(String value) {
    return value.length() <= MAX_SHORT_STRING / 3
        || value.getBytes(StandardCharsets.UTF_8).length <= MAX_SHORT_STRING;
  }

  private static @Nullable String tooLong(String what, @Nullable String value) {
    if (value == null) {
      return null;
    }
    int bytes = value.getBytes(StandardCharsets.UTF_8).length;
    if (bytes <= MAX_SHORT_STRING) {
      return null;
    }
    return what
        + " is "
        + bytes
        + " bytes in UTF-8, AMQP allows at most "
        + MAX_SHORT_STRING
        + " ('"
        + value.substring(0, 40)
        + "...')";
  }

  /** Closes a channel whose state is unknown; its unconfirmed messages are answered retryable. */
  private void abandon(ConfirmChannel ch) {
    if (current == ch) {
      current = null;
    }
    ch.shutDown("RabbitMQ channel abandoned after a failed publish; not confirmed");
    try {
      ch.channel.abort();
    } catch (IOException | RuntimeException e) {
      // Closing anyway.
    }
  }

  /**
   * Closes this publisher's channel, and its connection if it opened one; never a connection the
   * host passed in. Events still waiting for confirms are answered retryable.
   */
  @Override
  public void close() {
    lock.lock();
    try {
      closed = true;
      sender.shutdown();
      ConfirmChannel ch = current;
      current = null;
      if (ch != null && ch.channel.isOpen()) {
        try {
          ch.channel.close();
        } catch (IOException | TimeoutException | AlreadyClosedException e) {
          // Closing anyway; outstanding confirms are failed by the shutdown listener.
        }
      }
      Connection own = ownConnection;
      ownConnection = null;
      if (own != null && own.isOpen()) {
        try {
          own.close();
        } catch (IOException | AlreadyClosedException e) {
          // Already going away.
        }
      }
    } finally {
      lock.unlock();
    }
  }

  private ConfirmChannel channel() throws IOException, TimeoutException {
    ConfirmChannel ch = current;
    if (ch != null && ch.channel.isOpen()) {
      return ch;
    }
    Connection connection = hostConnection;
    if (connection == null) {
      Connection own = ownConnection;
      if (own == null || !own.isOpen()) {
        own = requireNonNull(factory).newConnection("pgoutbox-relay");
        ownConnection = own;
      }
      connection = own;
    }
    Channel channel = connection.createChannel();
    if (channel == null) {
      throw new IOException(
          "no channel available on the RabbitMQ connection (channel-max reached)");
    }
    ch = new ConfirmChannel(channel);
    current = ch;
    return ch;
  }

  private AMQP.BasicProperties properties(OutboxMessage m) {
    Map<String, Object> headers = new HashMap<>();
    m.headers()
        .forEach(
            (name, value) -> {
              // A row written before the writer refused envelope names: the envelope's wins.
              if (!PublisherSupport.isReservedHeader(name)) {
                headers.put(name, value);
              }
            });
    headers.put(EVENT_TYPE_HEADER, m.eventType());
    headers.put(AGGREGATE_TYPE_HEADER, m.aggregateType());
    headers.put(AGGREGATE_ID_HEADER, m.aggregateId());
    CloudEvents ce = cloudEvents;
    if (ce != null) {
      for (Map.Entry<String, String> a : ce.attributes(m).entrySet()) {
        headers.put(RabbitMqCloudEvents.PREFIX + a.getKey(), a.getValue());
      }
    }
    return new AMQP.BasicProperties.Builder()
        .messageId(m.id().toString())
        .deliveryMode(2)
        .contentType("application/json")
        .type(fitsShortString(m.eventType()) ? m.eventType() : null)
        .timestamp(Date.from(m.createdAt()))
        .headers(headers)
        .build();
  }

  /** One message waiting for its confirm. */
  private static final class Pending extends CompletableFuture<PublishResult> {
    final String messageId;
    final RabbitMqRoute route;

    Pending(String messageId, RabbitMqRoute route) {
      this.messageId = messageId;
      this.route = route;
    }
  }

  /** A channel in confirm mode and the messages it has not confirmed yet. */
  private static final class ConfirmChannel {
    final Channel channel;
    final ConcurrentNavigableMap<Long, Pending> outstanding = new ConcurrentSkipListMap<>();
    final Map<String, String> returned = new ConcurrentHashMap<>();

    ConfirmChannel(Channel channel) throws IOException {
      this.channel = channel;
      channel.confirmSelect();
      // RabbitMQ sends basic.return before the basic.ack of the same message.
      channel.addReturnListener(
          r ->
              returned.put(
                  String.valueOf(r.getProperties().getMessageId()),
                  "unroutable: RabbitMQ returned the message published to exchange '"
                      + r.getExchange()
                      + "' with routing key '"
                      + r.getRoutingKey()
                      + "': "
                      + r.getReplyCode()
                      + " "
                      + r.getReplyText()));
      channel.addConfirmListener(
          (seq, multiple) -> confirmed(seq, multiple, true),
          (seq, multiple) -> confirmed(seq, multiple, false));
      channel.addShutdownListener(this::shutDown);
    }

    private void confirmed(long seq, boolean multiple, boolean ack) {
      if (multiple) {
        ConcurrentNavigableMap<Long, Pending> done = outstanding.headMap(seq, true);
        done.forEach((s, p) -> answer(p, ack));
        done.clear();
      } else {
        Pending p = outstanding.remove(seq);
        if (p != null) {
          answer(p, ack);
        }
      }
    }

    private void answer(Pending p, boolean ack) {
      String unroutable = returned.remove(p.messageId);
      if (unroutable != null) {
        p.complete(PublishResult.permanent(unroutable));
      } else if (ack) {
        p.complete(PublishResult.published());
      } else {
        p.complete(
            PublishResult.retryable(
                "RabbitMQ nacked the message published to exchange '"
                    + p.route.exchange()
                    + "' (internal broker error)"));
      }
    }

    private void shutDown(ShutdownSignalException cause) {
      shutDown("RabbitMQ channel closed before confirm: " + cause.getMessage());
    }

    void shutDown(String reason) {
      PublishResult lost = PublishResult.retryable(reason);
      outstanding.values().forEach(p -> p.complete(lost));
      outstanding.clear();
      returned.clear();
    }
  }

  /**
   * Settings of a {@link RabbitMqPublisher}. Not thread-safe; call {@link #build()} once per
   * publisher.
   */
  public static final class Builder {
    private final @Nullable Connection connection;
    private final @Nullable ConnectionFactory factory;
    private final RabbitMqRouting routing;
    private Duration confirmTimeout = DEFAULT_CONFIRM_TIMEOUT;
    private @Nullable CloudEvents cloudEvents;

    private Builder(
        @Nullable Connection connection,
        @Nullable ConnectionFactory factory,
        RabbitMqRouting routing) {
      this.connection = connection;
      this.factory = factory;
      this.routing = requireNonNull(routing, "routing");
    }

    /**
     * How long to wait for the broker's confirm of a message before answering it retryable. Between
     * 1 ms and 10 minutes, default {@link #DEFAULT_CONFIRM_TIMEOUT}.
     */
    public Builder confirmTimeout(Duration timeout) {
      requireNonNull(timeout, "confirmTimeout");
      if (timeout.toMillis() < 1 || timeout.compareTo(Duration.ofMinutes(10)) > 0) {
        throw new IllegalArgumentException(
            "confirmTimeout must be between 1ms and 10 minutes, was " + timeout);
      }
      this.confirmTimeout = timeout;
      return this;
    }

    /**
     * Sends each event as a binary-mode CloudEvent as the CloudEvents AMQP binding says: headers
     * {@code cloudEvents:id}, {@code cloudEvents:source}, {@code cloudEvents:specversion}, {@code
     * cloudEvents:type}, {@code cloudEvents:subject}, {@code cloudEvents:time}, and the {@code
     * content-type} property (see {@link CloudEvents}); read back with {@link RabbitMqCloudEvents}.
     * Default: none.
     *
     * @throws IllegalArgumentException for {@link CloudEvents#structured}
     */
    public Builder cloudEvents(CloudEvents cloudEvents) {
      this.cloudEvents =
          requireNonNull(cloudEvents, "cloudEvents").requireBinary("RabbitMqPublisher");
      return this;
    }

    /** A publisher with these settings; connects lazily, on the first batch. */
    public RabbitMqPublisher build() {
      return new RabbitMqPublisher(this);
    }
  }
}

package dev.pgoutbox.relay.kafka;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.core.consumer.KafkaCloudEvents;
import dev.pgoutbox.core.consumer.KafkaEventIds;
import dev.pgoutbox.relay.AggregateSequencer;
import dev.pgoutbox.relay.CloudEvents;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.PublisherSupport;
import dev.pgoutbox.relay.SpanAttributes;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.RecordBatchTooLargeException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.jspecify.annotations.Nullable;

/**
 * Publishes outbox events to Apache Kafka.
 *
 * <pre>{@code
 * try (KafkaPublisher kafka = KafkaPublisher.builder("broker-1:9092,broker-2:9092").build()) {
 *   // hand it to the relay; topic = aggregate type, key = aggregate id
 * }
 * }</pre>
 *
 * <p><b>The record.</b> Topic from {@link KafkaRouting} (default: the aggregate type), key = the
 * aggregate id, value = the payload JSON as stored (UTF-8), headers {@value #EVENT_ID_HEADER} (the
 * event id, the consumer's dedup key, read back with {@link KafkaEventIds}), {@value
 * #EVENT_TYPE_HEADER}, {@value #AGGREGATE_TYPE_HEADER}, and every stored header (e.g. {@code
 * traceparent}) under its own name, all as UTF-8 text.
 *
 * <p><b>Pipelining and order.</b> Events go through {@link AggregateSequencer}: the first event of
 * every aggregate in the batch is handed to the producer at once (the producer batches them), and
 * an aggregate's next event only once the broker acknowledged the one before it. So event N+1 never
 * travels in a later producer batch than a failed event N: not when N expires ({@code
 * delivery.timeout.ms}), not when the broker refuses N as too large for the topic's {@code
 * max.message.bytes} while the client allowed it. The price is one round trip (plus {@code
 * linger.ms}, 0 on a producer this publisher creates) per event of one aggregate within a batch;
 * different aggregates still share every round trip. Records are handed to the producer on a thread
 * the publisher owns ({@code pgoutbox-kafka-publisher}), never from the producer's callback thread,
 * so {@code publish} returns at once and the relay's publish timeout bounds a {@code send} blocked
 * on metadata.
 *
 * <p><b>Partitions.</b> The key sends an aggregate to one partition; the idempotent producer with
 * {@code acks=all} and at most 5 requests in flight keeps a partition's records in send order
 * through retries. A publisher built from bootstrap servers configures its producer so, and {@link
 * Builder#property} refuses {@code partitioner.class} and {@code partitioner.ignore.keys=true},
 * which would scatter an aggregate over partitions. A host that passes its own producer must
 * configure it the same way: {@code enable.idempotence=true}, {@code acks=all}, {@code
 * max.in.flight.requests.per.connection<=5}, {@code retries>0}, key serializer {@code
 * StringSerializer}, value serializer {@code ByteArraySerializer}, the default partitioner, and a
 * small {@code linger.ms}.
 *
 * <p><b>Failures.</b> Permanent, for that event alone: the routing or the record could not be
 * built; record too large (for the client's {@code max.request.size} or the topic's {@code
 * max.message.bytes}), invalid topic, topic or cluster authorization, serialization, invalid
 * record. Everything else is retryable: broker unreachable, metadata or delivery timeouts ({@code
 * delivery.timeout.ms}), not enough replicas, leader changes, authentication (a credential problem
 * for all events, not this one). When the producer cannot even fetch metadata for a topic ({@code
 * max.block.ms}), the rest of the batch is answered retryable without trying, so a dead cluster
 * costs one timeout per batch, not one per event. Either way the later events of the failed event's
 * aggregate are held back.
 *
 * <p>Thread-safe (the Kafka producer is). {@link #close()} closes the producer only if this
 * publisher created it.
 */
public final class KafkaPublisher implements Publisher {

  /** The header that carries the event id: {@value}. */
  public static final String EVENT_ID_HEADER = KafkaEventIds.HEADER;

  /** The header that carries the event type: {@value}. */
  public static final String EVENT_TYPE_HEADER = "event_type";

  /** The header that carries the aggregate type: {@value}. */
  public static final String AGGREGATE_TYPE_HEADER = "aggregate_type";

  /**
   * How long a record may take to be acknowledged, retries included, when this publisher creates
   * the producer: 30 seconds ({@code delivery.timeout.ms}; Kafka's own default is 2 minutes).
   */
  public static final Duration DEFAULT_DELIVERY_TIMEOUT = Duration.ofSeconds(30);

  private final Producer<String, byte[]> producer;
  private final boolean ownsProducer;
  private final KafkaRouting routing;
  private final ExecutorService sender;
  private final AggregateSequencer sequencer;
  private final @Nullable CloudEvents cloudEvents;
  private final Map<String, Object> clientAttributes;

  private KafkaPublisher(
      Producer<String, byte[]> producer,
      boolean owns,
      KafkaRouting routing,
      @Nullable CloudEvents cloudEvents,
      Map<String, Object> clientAttributes) {
    this.clientAttributes = clientAttributes;
    this.producer = producer;
    this.ownsProducer = owns;
    this.routing = routing;
    this.cloudEvents = cloudEvents;
    this.sender =
        Executors.newSingleThreadExecutor(
            r -> {
              Thread t = new Thread(r, "pgoutbox-kafka-publisher");
              t.setDaemon(true);
              return t;
            });
    this.sequencer = AggregateSequencer.builder().executor(sender).build();
  }

  /**
   * A builder for a publisher that creates (and closes) its own producer for {@code
   * bootstrapServers}, configured for ordered, idempotent delivery.
   */
  public static Builder builder(String bootstrapServers) {
    requireNonNull(bootstrapServers, "bootstrapServers");
    if (bootstrapServers.isBlank()) {
      throw new IllegalArgumentException("bootstrapServers must not be blank");
    }
    return new Builder(bootstrapServers, null);
  }

  /**
   * A builder for a publisher that sends with the host's {@code producer} and never closes it. See
   * the class comment for the configuration it needs.
   */
  public static Builder builder(Producer<String, byte[]> producer) {
    return new Builder(null, requireNonNull(producer, "producer"));
  }

  @Override
  public CompletionStage<List<PublishResult>> publish(List<OutboxMessage> batch) {
    AtomicReference<@Nullable String> stopBatch = new AtomicReference<>();
    return sequencer.publish(batch, m -> send(m, stopBatch));
  }

  /** {@code kafka}. */
  @Override
  public String messagingSystem() {
    return "kafka";
  }

  /** The event's topic, or null when the routing throws. */
  @Override
  public @Nullable String destination(OutboxMessage message) {
    try {
      return routing.topic(message);
    } catch (RuntimeException e) {
      return null;
    }
  }

  /**
   * {@code messaging.kafka.message.key} (the aggregate id) and, for a producer this publisher
   * created, {@code messaging.client.id} and the first bootstrap server as {@code server.address}
   * and {@code server.port}. The partition and offset come with the broker's answer.
   */
  @Override
  public Map<String, Object> traceAttributes(OutboxMessage message) {
    Map<String, Object> attributes = new LinkedHashMap<>(clientAttributes);
    attributes.put(SpanAttributes.KAFKA_MESSAGE_KEY, message.aggregateId());
    return attributes;
  }

  /** Sends one event, on the sender thread; {@code stopBatch} ends the batch after an outage. */
  private CompletableFuture<PublishResult> send(
      OutboxMessage m, AtomicReference<@Nullable String> stopBatch) {
    String stopped = stopBatch.get();
    if (stopped != null) {
      return CompletableFuture.completedFuture(PublishResult.retryable(stopped));
    }
    String topic;
    ProducerRecord<String, byte[]> record;
    try {
      topic = requireNonNull(routing.topic(m), "routing returned null");
      record = record(topic, m);
    } catch (RuntimeException e) {
      return CompletableFuture.completedFuture(
          PublishResult.permanent("cannot build the Kafka record: " + e));
    }
    Sent sent = new Sent(topic);
    try {
      producer.send(record, (metadata, e) -> sent.done(metadata, e));
    } catch (RuntimeException e) {
      sent.done(null, e);
    }
    Throwable early = sent.error;
    if (sent.isDone()
        && (early instanceof TimeoutException || early instanceof IllegalStateException)) {
      // No metadata within max.block.ms, or the producer is closed: the rest of the batch would
      // wait as long for nothing.
      stopBatch.compareAndSet(
          null,
          "not sent: an earlier event of this batch could not be sent: " + describe(early, topic));
    }
    return sent;
  }

  /** Closes the producer if this publisher created it, and the sender thread. */
  @Override
  public void close() {
    sender.shutdown();
    if (ownsProducer) {
      producer.close();
    }
  }

  private ProducerRecord<String, byte[]> record(String topic, OutboxMessage m) {
    RecordHeaders headers = new RecordHeaders();
    for (Map.Entry<String, String> h : m.headers().entrySet()) {
      // A row written before the writer refused envelope names (ce_type, event_type...) would
      // give two headers of one name: the envelope's wins.
      if (!PublisherSupport.isReservedHeader(h.getKey())) {
        headers.add(h.getKey(), utf8(h.getValue()));
      }
    }
    headers.add(EVENT_ID_HEADER, utf8(m.id().toString()));
    headers.add(EVENT_TYPE_HEADER, utf8(m.eventType()));
    headers.add(AGGREGATE_TYPE_HEADER, utf8(m.aggregateType()));
    CloudEvents ce = cloudEvents;
    if (ce != null) {
      for (Map.Entry<String, String> a : ce.attributes(m).entrySet()) {
        headers.add(KafkaCloudEvents.PREFIX + a.getKey(), utf8(a.getValue()));
      }
      headers.add(KafkaCloudEvents.CONTENT_TYPE, utf8(CloudEvents.DATA_CONTENT_TYPE));
    }
    return new ProducerRecord<>(topic, null, m.aggregateId(), m.payloadBytes(), headers);
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** Classifies what the producer reported for one record. */
  static PublishResult classify(Throwable error, String topic) {
    Throwable e = PublisherSupport.unwrap(error);
    String reason = describe(e, topic);
    if (e instanceof RecordTooLargeException
        || e instanceof RecordBatchTooLargeException
        || e instanceof InvalidTopicException
        || e instanceof AuthorizationException
        || e instanceof SerializationException
        || e instanceof InvalidRecordException) {
      return PublishResult.permanent(reason);
    }
    return PublishResult.retryable(reason);
  }

  private static String describe(Throwable error, String topic) {
    Throwable e = PublisherSupport.unwrap(error);
    return "Kafka topic " + topic + ": " + e.getClass().getSimpleName() + ": " + e.getMessage();
  }

  /** One record's result, completed by its callback. */
  private static final class Sent extends CompletableFuture<PublishResult> {
    private final String topic;
    volatile @Nullable Throwable error;

    Sent(String topic) {
      this.topic = topic;
    }

    void done(@Nullable RecordMetadata metadata, @Nullable Exception e) {
      if (e == null) {
        complete(
            metadata == null
                ? PublishResult.published()
                : metadata.hasOffset()
                    ? PublishResult.published(
                        Map.of(
                            SpanAttributes.PARTITION_ID,
                            Integer.toString(metadata.partition()),
                            SpanAttributes.KAFKA_OFFSET,
                            metadata.offset()))
                    : PublishResult.published(
                        Map.of(
                            SpanAttributes.PARTITION_ID, Integer.toString(metadata.partition()))));
      } else {
        error = e;
        complete(classify(e, topic));
      }
    }
  }

  /**
   * Settings of a {@link KafkaPublisher}. Not thread-safe; {@link #build()} may be called more than
   * once only for a publisher on a host's producer (each other call creates a producer).
   */
  public static final class Builder {
    private final @Nullable String bootstrapServers;
    private final @Nullable Producer<String, byte[]> producer;
    private KafkaRouting routing = KafkaRouting.byAggregateType();
    private Duration deliveryTimeout = DEFAULT_DELIVERY_TIMEOUT;
    private final Map<String, Object> properties = new LinkedHashMap<>();
    private @Nullable CloudEvents cloudEvents;

    private Builder(
        @Nullable String bootstrapServers, @Nullable Producer<String, byte[]> producer) {
      this.bootstrapServers = bootstrapServers;
      this.producer = producer;
    }

    /**
     * Sends each event as a binary-mode CloudEvent: headers {@code ce_id}, {@code ce_source},
     * {@code ce_specversion}, {@code ce_type}, {@code ce_subject}, {@code ce_time} and {@code
     * content-type} (see {@link CloudEvents}), read back with {@link KafkaCloudEvents}. Default:
     * none.
     *
     * @throws IllegalArgumentException for {@link CloudEvents#structured}
     */
    public Builder cloudEvents(CloudEvents cloudEvents) {
      this.cloudEvents = requireNonNull(cloudEvents, "cloudEvents").requireBinary("KafkaPublisher");
      return this;
    }

    /** How events are routed to topics. Default {@link KafkaRouting#byAggregateType()}. */
    public Builder routing(KafkaRouting routing) {
      this.routing = requireNonNull(routing, "routing");
      return this;
    }

    /**
     * For a producer this publisher creates: how long a record may take to be acknowledged, retries
     * included, before it is answered retryable ({@code delivery.timeout.ms}); also bounds the
     * metadata wait ({@code max.block.ms}). At least 1 second, default {@link
     * #DEFAULT_DELIVERY_TIMEOUT}.
     */
    public Builder deliveryTimeout(Duration timeout) {
      requireNonNull(timeout, "deliveryTimeout");
      if (timeout.compareTo(Duration.ofSeconds(1)) < 0) {
        throw new IllegalArgumentException("deliveryTimeout must be at least 1s, was " + timeout);
      }
      this.deliveryTimeout = timeout;
      return this;
    }

    /**
     * For a producer this publisher creates: any other producer setting (security, compression,
     * {@code linger.ms}...).
     *
     * @throws IllegalArgumentException on a publisher for a host's producer (configure that
     *     producer directly), and for settings that would break per-aggregate order: {@code
     *     partitioner.class} (any custom partitioner) and {@code partitioner.ignore.keys=true},
     *     which scatter an aggregate over partitions, {@code enable.idempotence=false}, {@code
     *     acks} other than {@code all}/{@code -1}, {@code max.in.flight.requests.per.connection}
     *     outside 1..5, and the serializers
     */
    public Builder property(String name, Object value) {
      requireNonNull(name, "name");
      requireNonNull(value, "value");
      if (producer != null) {
        throw new IllegalArgumentException(
            "property("
                + name
                + ", ...) configures a producer this publisher creates; configure the host's"
                + " producer directly");
      }
      refuseIfScattering(name, value);
      refuseIfUnordered(name, value);
      properties.put(name, value);
      return this;
    }

    /** Settings that would send one aggregate's records to several partitions. */
    private static void refuseIfScattering(String name, Object value) {
      String v = String.valueOf(value).trim();
      if (name.equals(ProducerConfig.PARTITIONER_CLASS_CONFIG)) {
        throw new IllegalArgumentException(
            "Kafka producer property "
                + ProducerConfig.PARTITIONER_CLASS_CONFIG
                + "="
                + v
                + " is not allowed: pgoutbox needs the default partitioner (a hash of the key,"
                + " the aggregate id) to keep each aggregate on one partition");
      }
      if (name.equals(ProducerConfig.PARTITIONER_IGNORE_KEYS_CONFIG)
          && !v.equalsIgnoreCase("false")) {
        throw new IllegalArgumentException(
            "Kafka producer property "
                + ProducerConfig.PARTITIONER_IGNORE_KEYS_CONFIG
                + "="
                + v
                + " is not allowed: pgoutbox partitions by key (the aggregate id) to keep each"
                + " aggregate on one partition");
      }
    }

    /** A publisher with these settings; creates the producer when given bootstrap servers. */
    public KafkaPublisher build() {
      if (producer != null) {
        return new KafkaPublisher(producer, false, routing, cloudEvents, Map.of());
      }
      Map<String, Object> config = new HashMap<>();
      config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, requireNonNull(bootstrapServers));
      config.put(ProducerConfig.CLIENT_ID_CONFIG, "pgoutbox-relay");
      config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
      config.put(ProducerConfig.ACKS_CONFIG, "all");
      config.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 5);
      config.put(ProducerConfig.RETRIES_CONFIG, Integer.MAX_VALUE);
      // One event per aggregate in flight: linger is pure latency on every hop of an aggregate's
      // run, and records still batch while requests are in flight (KafkaPublisherIT measures it).
      config.put(ProducerConfig.LINGER_MS_CONFIG, 0);
      long delivery = deliveryTimeout.toMillis();
      config.put(
          ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) Math.min(delivery, Integer.MAX_VALUE));
      config.put(
          ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) Math.min(30_000, (delivery - 5) / 2));
      config.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, delivery);
      config.putAll(properties);
      KafkaProducer<String, byte[]> created =
          new KafkaProducer<>(config, new StringSerializer(), new ByteArraySerializer());
      Map<String, Object> client =
          new LinkedHashMap<>(
              SpanAttributes.firstServer(
                  String.valueOf(config.get(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG))));
      client.put(
          SpanAttributes.CLIENT_ID, String.valueOf(config.get(ProducerConfig.CLIENT_ID_CONFIG)));
      return new KafkaPublisher(created, true, routing, cloudEvents, Map.copyOf(client));
    }

    private static void refuseIfUnordered(String name, Object value) {
      String v = String.valueOf(value).trim();
      boolean bad =
          switch (name) {
            case ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG -> !v.equalsIgnoreCase("true");
            case ProducerConfig.ACKS_CONFIG -> !(v.equals("all") || v.equals("-1"));
            case ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION -> {
              try {
                int n = Integer.parseInt(v);
                yield n < 1 || n > 5;
              } catch (NumberFormatException e) {
                yield true;
              }
            }
            case ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG,
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG ->
                true;
            default -> false;
          };
      if (bad) {
        throw new IllegalArgumentException(
            "Kafka producer property "
                + name
                + "="
                + v
                + " is not allowed: pgoutbox needs enable.idempotence=true, acks=all,"
                + " max.in.flight.requests.per.connection between 1 and 5, and its own serializers"
                + " to keep each aggregate's events in order");
      }
    }
  }
}

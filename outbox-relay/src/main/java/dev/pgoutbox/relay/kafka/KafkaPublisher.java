package dev.pgoutbox.relay.kafka;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.Publisher;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.InterruptException;
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
 * <p><b>Pipelining.</b> The whole batch is handed to the producer with callbacks, then {@code
 * flush()} is called once, and each record's result is read from its callback.
 *
 * <p><b>Order.</b> The key sends an aggregate to one partition; the idempotent producer with {@code
 * acks=all} and at most 5 requests in flight keeps a partition's records in send order through
 * retries. A publisher built from bootstrap servers configures its producer so. A host that passes
 * its own producer must configure it the same way: {@code enable.idempotence=true}, {@code
 * acks=all}, {@code max.in.flight.requests.per.connection<=5}, {@code retries>0}, key serializer
 * {@code StringSerializer}, value serializer {@code ByteArraySerializer}, and should keep {@code
 * partitioner.class} at the default (hash of the key). An event refused before it leaves the client
 * (too large, unknown topic, serializer error) holds back the later events of its aggregate in the
 * batch: they are not sent and are answered retryable.
 *
 * <p><b>Failures.</b> Permanent: record too large, invalid topic, topic or cluster authorization,
 * serialization, invalid record. Everything else is retryable: broker unreachable, metadata or
 * delivery timeouts ({@code delivery.timeout.ms}), not enough replicas, leader changes,
 * authentication (a credential problem for all events, not this one). When the producer cannot even
 * fetch metadata for a topic ({@code max.block.ms}), the rest of the batch is answered retryable
 * without trying, so a dead cluster costs one timeout per batch, not one per event.
 *
 * <p>Thread-safe (the Kafka producer is). {@link #close()} closes the producer only if this
 * publisher created it.
 */
public final class KafkaPublisher implements Publisher {

  /** The header that carries the event id: {@value}. */
  public static final String EVENT_ID_HEADER = "event_id";

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

  private KafkaPublisher(Producer<String, byte[]> producer, boolean owns, KafkaRouting routing) {
    this.producer = producer;
    this.ownsProducer = owns;
    this.routing = routing;
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
    List<CompletableFuture<PublishResult>> results = new ArrayList<>(batch.size());
    Map<String, UUID> failedAggregates = new HashMap<>();
    String stopBatch = null;
    for (OutboxMessage m : batch) {
      String aggregate = m.aggregateType() + '\u0000' + m.aggregateId();
      UUID failedBefore = failedAggregates.get(aggregate);
      if (stopBatch != null) {
        results.add(CompletableFuture.completedFuture(PublishResult.retryable(stopBatch)));
        continue;
      }
      if (failedBefore != null) {
        results.add(CompletableFuture.completedFuture(heldBack(failedBefore)));
        continue;
      }
      String topic;
      ProducerRecord<String, byte[]> record;
      try {
        topic = requireNonNull(routing.topic(m), "routing returned null");
        record = record(topic, m);
      } catch (RuntimeException e) {
        results.add(
            CompletableFuture.completedFuture(
                PublishResult.permanent("Kafka routing failed for event " + m.id() + ": " + e)));
        failedAggregates.put(aggregate, m.id());
        continue;
      }
      Sent sent = new Sent(topic);
      try {
        producer.send(record, (metadata, e) -> sent.done(e));
      } catch (RuntimeException e) {
        sent.done(e);
      }
      Throwable early = sent.error;
      if (sent.isDone() && early != null) {
        // Refused before it left the client: keep the aggregate's later events back.
        failedAggregates.put(aggregate, m.id());
        if (early instanceof TimeoutException || early instanceof IllegalStateException) {
          stopBatch =
              "not sent: an earlier event of this batch could not be sent: "
                  + describe(early, topic);
        }
      }
      results.add(sent);
    }
    try {
      producer.flush();
    } catch (InterruptException e) {
      // The interrupt flag is set again by InterruptException; the callbacks still complete.
    }
    CompletableFuture<?>[] all = results.toArray(new CompletableFuture<?>[0]);
    return CompletableFuture.allOf(all)
        .thenApply(v -> results.stream().map(CompletableFuture::join).toList());
  }

  /** Closes the producer if this publisher created it. */
  @Override
  public void close() {
    if (ownsProducer) {
      producer.close();
    }
  }

  private static PublishResult heldBack(UUID failed) {
    return PublishResult.retryable(
        "not sent: earlier event " + failed + " of this aggregate failed in the same batch");
  }

  private static ProducerRecord<String, byte[]> record(String topic, OutboxMessage m) {
    RecordHeaders headers = new RecordHeaders();
    for (Map.Entry<String, String> h : m.headers().entrySet()) {
      headers.add(h.getKey(), utf8(h.getValue()));
    }
    headers.add(EVENT_ID_HEADER, utf8(m.id().toString()));
    headers.add(EVENT_TYPE_HEADER, utf8(m.eventType()));
    headers.add(AGGREGATE_TYPE_HEADER, utf8(m.aggregateType()));
    return new ProducerRecord<>(topic, null, m.aggregateId(), m.payloadBytes(), headers);
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** Classifies what the producer reported for one record. */
  static PublishResult classify(Throwable error, String topic) {
    Throwable e = unwrap(error);
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

  private static Throwable unwrap(Throwable error) {
    Throwable e = error;
    while ((e instanceof CompletionException || e instanceof ExecutionException)
        && e.getCause() != null) {
      e = e.getCause();
    }
    return e;
  }

  private static String describe(Throwable error, String topic) {
    Throwable e = unwrap(error);
    return "Kafka topic " + topic + ": " + e.getClass().getSimpleName() + ": " + e.getMessage();
  }

  /** One record's result, completed by its callback. */
  private static final class Sent extends CompletableFuture<PublishResult> {
    private final String topic;
    volatile @Nullable Throwable error;

    Sent(String topic) {
      this.topic = topic;
    }

    void done(@Nullable Exception e) {
      if (e == null) {
        complete(PublishResult.published());
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

    private Builder(
        @Nullable String bootstrapServers, @Nullable Producer<String, byte[]> producer) {
      this.bootstrapServers = bootstrapServers;
      this.producer = producer;
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
     * {@code linger.ms}...). Settings that would break per-aggregate order are refused by {@link
     * #build()}: {@code enable.idempotence=false}, {@code acks} other than {@code all}/{@code -1},
     * {@code max.in.flight.requests.per.connection} above 5, and the serializers.
     */
    public Builder property(String name, Object value) {
      properties.put(requireNonNull(name, "name"), requireNonNull(value, "value"));
      return this;
    }

    /**
     * A publisher with these settings; creates the producer when given bootstrap servers.
     *
     * @throws IllegalStateException if producer properties were set for a host's producer, or if
     *     they would break per-aggregate order
     */
    public KafkaPublisher build() {
      if (producer != null) {
        if (!properties.isEmpty()) {
          throw new IllegalStateException(
              "property(...) configures a producer this publisher creates; configure the host's"
                  + " producer directly (got "
                  + properties.keySet()
                  + ")");
        }
        return new KafkaPublisher(producer, false, routing);
      }
      Map<String, Object> config = new HashMap<>();
      config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, requireNonNull(bootstrapServers));
      config.put(ProducerConfig.CLIENT_ID_CONFIG, "pgoutbox-relay");
      config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
      config.put(ProducerConfig.ACKS_CONFIG, "all");
      config.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 5);
      config.put(ProducerConfig.RETRIES_CONFIG, Integer.MAX_VALUE);
      config.put(ProducerConfig.LINGER_MS_CONFIG, 5);
      long delivery = deliveryTimeout.toMillis();
      config.put(
          ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) Math.min(delivery, Integer.MAX_VALUE));
      config.put(
          ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) Math.min(30_000, (delivery - 5) / 2));
      config.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, delivery);
      for (Map.Entry<String, Object> p : properties.entrySet()) {
        refuseIfUnordered(p.getKey(), p.getValue());
        config.put(p.getKey(), p.getValue());
      }
      KafkaProducer<String, byte[]> created =
          new KafkaProducer<>(config, new StringSerializer(), new ByteArraySerializer());
      return new KafkaPublisher(created, true, routing);
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
        throw new IllegalStateException(
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

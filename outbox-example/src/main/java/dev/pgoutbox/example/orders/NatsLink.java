package dev.pgoutbox.example.orders;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.core.consumer.NatsEventIds;
import dev.pgoutbox.core.consumer.NatsHeaders;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.nats.NatsPublisher;
import dev.pgoutbox.relay.nats.NatsRouting;
import dev.pgoutbox.testing.Secrets;
import io.nats.client.Connection;
import io.nats.client.ConsumerContext;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.Message;
import io.nats.client.MessageConsumer;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.api.AckPolicy;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.DeliverPolicy;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Order events over NATS JetStream: subjects {@code <topic>.order.<event type>}, captured by the
 * stream {@code <TOPIC>} (created if missing, 2-minute duplicate window on {@code Nats-Msg-Id},
 * read back with {@link NatsEventIds}). Shipping consumes with the durable consumer {@code
 * shipping}, explicit acks and one message in flight, so each order's events are applied in order
 * even when one is redelivered.
 */
public final class NatsLink implements BrokerLink {

  private static final Logger LOG = LoggerFactory.getLogger(NatsLink.class);

  private final String url;
  private final String stream;
  private final Connection connection;
  private final NatsPublisher publisher;

  /**
   * Connects to {@code url} ({@code nats://host:4222}), creates the stream if missing, and builds
   * the relay's publisher.
   *
   * @throws IllegalStateException if NATS cannot be reached or has no JetStream
   */
  public NatsLink(String url, String topic, Duration ackTimeout) {
    this.url = requireNonNull(url, "url");
    requireNonNull(topic, "topic");
    this.stream = topic.toUpperCase(Locale.ROOT).replaceAll("[^A-Z0-9_-]", "_");
    Options options =
        new Options.Builder()
            .server(url)
            .maxReconnects(-1)
            .connectionName("pgoutbox-example")
            .build();
    try {
      connection = Nats.connect(options);
      JetStreamManagement jsm = connection.jetStreamManagement();
      try {
        jsm.getStreamInfo(stream);
      } catch (JetStreamApiException notFound) {
        jsm.addStream(
            StreamConfiguration.builder()
                .name(stream)
                .subjects(topic + ".>")
                .storageType(StorageType.File)
                .duplicateWindow(Duration.ofMinutes(2))
                .build());
        LOG.info("Created JetStream stream {} on {}.>", stream, topic);
      }
    } catch (IOException | JetStreamApiException e) {
      throw new IllegalStateException("Could not set up NATS JetStream at " + url + ": " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted while connecting to NATS at " + url, e);
    }
    this.publisher =
        NatsPublisher.builder(options)
            .routing(NatsRouting.byTypes(topic))
            .ackTimeout(ackTimeout)
            .build();
  }

  @Override
  public String describe() {
    return "NATS " + Secrets.mask(url) + ", stream " + stream;
  }

  @Override
  public Publisher publisher() {
    return publisher;
  }

  @Override
  public AutoCloseable startConsumer(ShippingService shipping) {
    try {
      ConsumerContext consumer =
          connection
              .getStreamContext(stream)
              .createOrUpdateConsumer(
                  ConsumerConfiguration.builder()
                      .durable(ShippingService.CONSUMER)
                      .ackPolicy(AckPolicy.Explicit)
                      .deliverPolicy(DeliverPolicy.All)
                      .maxAckPending(1)
                      .ackWait(Duration.ofSeconds(30))
                      .build());
      MessageConsumer running = consumer.consume(message -> deliver(message, shipping));
      return () -> {
        running.stop();
        running.close();
      };
    } catch (IOException | JetStreamApiException e) {
      throw new IllegalStateException("Could not consume from stream " + stream + ": " + e, e);
    }
  }

  private static void deliver(Message message, ShippingService shipping) {
    UUID eventId;
    try {
      eventId = NatsEventIds.eventId(message);
    } catch (OutboxException e) {
      shipping.reject(message.getSubject(), e);
      message.term(); // never redelivered
      return;
    }
    try {
      // NatsHeaders reads the value whether it travelled plain or encoded (a non-ASCII type).
      String type = NatsHeaders.get(message, NatsPublisher.EVENT_TYPE_HEADER);
      shipping.apply(
          eventId, type == null ? "" : type, new String(message.getData(), StandardCharsets.UTF_8));
      message.ack();
    } catch (IllegalArgumentException | OutboxException e) {
      shipping.reject("event " + eventId, e);
      message.term();
    } catch (RuntimeException e) {
      LOG.warn("Could not apply message {}, redelivering: {}", message.getSubject(), e.toString());
      message.nakWithDelay(Duration.ofMillis(500));
    }
  }

  @Override
  public Health health() {
    Connection.Status status = connection.getStatus();
    return new Health(status == Connection.Status.CONNECTED, describe() + ", " + status);
  }

  @Override
  public void close() {
    publisher.close();
    try {
      connection.close();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}

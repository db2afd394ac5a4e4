package dev.pgoutbox.example.orders;

import static java.util.Objects.requireNonNull;

import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.Delivery;
import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.core.consumer.RabbitMqEventIds;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.rabbitmq.RabbitMqPublisher;
import dev.pgoutbox.relay.rabbitmq.RabbitMqRouting;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Order events over RabbitMQ: a durable topic exchange named after the topic, routing key = event
 * type ({@code order.paid}), the event id as the AMQP {@code message-id} (read back with {@link
 * RabbitMqEventIds}). Shipping consumes from the durable queue {@code <topic>.shipping}, bound to
 * {@code order.#}, with manual acknowledgements; one queue and one consumer keep each order's
 * events in order.
 */
public final class RabbitMqLink implements BrokerLink {

  private static final Logger LOG = LoggerFactory.getLogger(RabbitMqLink.class);

  private final ConnectionFactory factory;
  private final String uri;
  private final String exchange;
  private final String queue;
  private final RabbitMqPublisher publisher;
  private final Connection connection;

  /**
   * Connects to {@code uri} ({@code amqp://user:pass@host:5672/vhost}), declares the exchange and
   * the shipping queue, and builds the relay's publisher.
   *
   * @throws IllegalStateException if RabbitMQ cannot be reached or the URI is bad
   */
  public RabbitMqLink(String uri, String topic, Duration confirmTimeout) {
    this.uri = requireNonNull(uri, "uri");
    this.exchange = requireNonNull(topic, "topic");
    this.queue = topic + ".shipping";
    this.factory = new ConnectionFactory();
    try {
      factory.setUri(uri);
      factory.setAutomaticRecoveryEnabled(true);
      factory.setNetworkRecoveryInterval(1_000);
      connection = factory.newConnection("pgoutbox-example-shipping");
      try (Channel channel = connection.createChannel()) {
        channel.exchangeDeclare(exchange, BuiltinExchangeType.TOPIC, true);
        channel.queueDeclare(queue, true, false, false, null);
        channel.queueBind(queue, exchange, OrderEvents.AGGREGATE_TYPE + ".#");
      }
    } catch (IOException
        | TimeoutException
        | java.net.URISyntaxException
        | java.security.GeneralSecurityException e) {
      throw new IllegalStateException("Could not connect to RabbitMQ at " + uri + ": " + e, e);
    }
    this.publisher =
        RabbitMqPublisher.builder(factory, RabbitMqRouting.byEventType(exchange))
            .confirmTimeout(confirmTimeout)
            .build();
  }

  @Override
  public String describe() {
    return "RabbitMQ " + factory.getHost() + ":" + factory.getPort() + ", exchange " + exchange;
  }

  @Override
  public Publisher publisher() {
    return publisher;
  }

  @Override
  public AutoCloseable startConsumer(ShippingService shipping) {
    try {
      Channel channel = connection.createChannel();
      channel.basicQos(100);
      String tag =
          channel.basicConsume(
              queue,
              false,
              (consumerTag, delivery) -> deliver(channel, delivery, shipping),
              consumerTag -> LOG.warn("Shipping consumer of {} was cancelled", queue));
      return () -> {
        try {
          channel.basicCancel(tag);
          channel.close();
        } catch (IOException | TimeoutException | RuntimeException e) {
          LOG.debug("Closing the shipping channel: {}", e.toString());
        }
      };
    } catch (IOException e) {
      throw new IllegalStateException(
          "Could not consume from " + queue + " on " + uri + ": " + e, e);
    }
  }

  private static void deliver(Channel channel, Delivery delivery, ShippingService shipping)
      throws IOException {
    long tag = delivery.getEnvelope().getDeliveryTag();
    UUID eventId;
    try {
      eventId = RabbitMqEventIds.eventId(delivery);
    } catch (OutboxException e) {
      shipping.reject("delivery " + tag, e);
      channel.basicNack(tag, false, false); // dropped (dead-lettered if the queue has a DLX)
      return;
    }
    try {
      String type = delivery.getProperties().getType();
      shipping.apply(
          eventId,
          type == null ? "" : type,
          new String(delivery.getBody(), StandardCharsets.UTF_8));
      channel.basicAck(tag, false);
    } catch (IllegalArgumentException e) {
      shipping.reject("event " + eventId, e);
      channel.basicNack(tag, false, false);
    } catch (RuntimeException e) {
      LOG.warn("Could not apply message {}, requeued: {}", tag, e.toString());
      channel.basicNack(tag, false, true);
    }
  }

  @Override
  public Health health() {
    boolean open = connection.isOpen();
    return new Health(open, describe() + (open ? ", connection open" : ", connection closed"));
  }

  @Override
  public void close() {
    publisher.close();
    try {
      connection.close(5_000);
    } catch (IOException | RuntimeException e) {
      LOG.debug("Closing the RabbitMQ connection: {}", e.toString());
    }
  }
}

package dev.pgoutbox.tools.chaos;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.ShutdownSignalException;
import dev.pgoutbox.testing.DeliveryChecker;
import dev.pgoutbox.testing.Secrets;
import dev.pgoutbox.testing.TcpProxy;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;

/**
 * RabbitMQ for the chaos run: the given broker (the machine's, shared with others, so it is never
 * stopped); the relays reach it through a {@link TcpProxy}, and the outage cuts that path. The run
 * declares its own exchange and the checker's queue, and deletes the exchange at the end.
 */
final class RabbitMqChaosBroker implements ChaosBroker {

  private final URI uri;
  private final ConnectionFactory factory;
  private final TcpProxy proxy;
  private final String exchange = "pgoutbox.chaos." + UUID.randomUUID().toString().substring(0, 8);

  private RabbitMqChaosBroker(URI uri, ConnectionFactory factory, TcpProxy proxy) {
    this.uri = uri;
    this.factory = factory;
    this.proxy = proxy;
  }

  static RabbitMqChaosBroker start(String uri) throws Exception {
    ConnectionFactory factory = new ConnectionFactory();
    factory.setUri(uri);
    try (Connection admin = factory.newConnection("pgoutbox-chaos-admin")) {
      // Fails fast, naming the broker, when it is not there.
      admin.createChannel().close();
    }
    return new RabbitMqChaosBroker(URI.create(uri), factory, TcpProxy.to(factory.getPort()));
  }

  @Override
  public String describe() {
    return "rabbitmq (" + Secrets.mask(uri.toString()) + ", exchange " + exchange + ")";
  }

  @Override
  public List<String> relayArguments() {
    URI proxied =
        URI.create(
            uri.getScheme()
                + "://"
                + (uri.getRawUserInfo() == null ? "" : uri.getRawUserInfo() + "@")
                + "127.0.0.1:"
                + proxy.port()
                + (uri.getRawPath() == null ? "" : uri.getRawPath()));
    return List.of("--rabbitmq", proxied.toString(), "--topic", exchange);
  }

  @Override
  public CheckerFeed consume(DeliveryChecker checker) throws Exception {
    return new QueueFeed(checker);
  }

  /**
   * The checker's consumer: its own queue bound to the run's exchange, on a connection straight to
   * the broker (not through the proxy the outage cuts) and without automatic recovery. Messages
   * routed while that queue is gone are missed for good, so a cancelled subscription or a closed
   * connection or channel is a checker error; the checker has read everything when its queue is
   * empty.
   */
  final class QueueFeed implements CheckerFeed {

    private final Failure failure = new Failure();
    private final Connection connection;
    private final String queue;
    private volatile boolean closing;

    QueueFeed(DeliveryChecker checker) throws Exception {
      ConnectionFactory checkerFactory = factory.clone();
      checkerFactory.setAutomaticRecoveryEnabled(false);
      connection = checkerFactory.newConnection("pgoutbox-chaos-checker");
      Channel channel = connection.createChannel();
      channel.exchangeDeclare(exchange, BuiltinExchangeType.TOPIC, false, false, null);
      // Server-named, auto-deleted with its consumer; not exclusive, so an operator (or a test)
      // can delete it from elsewhere, which the feed then reports.
      queue = channel.queueDeclare("", false, false, true, null).getQueue();
      channel.queueBind(queue, exchange, "#");
      channel.basicConsume(
          queue,
          true,
          new DefaultConsumer(channel) {
            @Override
            public void handleDelivery(
                String tag, Envelope envelope, AMQP.BasicProperties properties, byte[] body) {
              checker.receive(body, System.currentTimeMillis());
            }

            @Override
            public void handleCancel(String tag) {
              failure.set("RabbitMQ cancelled the checker's subscription to " + queue);
            }

            @Override
            public void handleShutdownSignal(String tag, ShutdownSignalException signal) {
              if (!closing) {
                failure.set("the checker's RabbitMQ channel closed: " + signal.getMessage());
              }
            }
          });
    }

    @Override
    public @Nullable String readError(Duration grace) throws InterruptedException {
      String failed = failure.get();
      if (failed != null) {
        return failed;
      }
      try (Channel channel = connection.createChannel()) {
        if (CheckerFeed.await(() -> failure.get() != null || ready(channel) == 0, grace)) {
          return failure.get();
        }
        return ready(channel) + " messages still wait in the checker's queue " + queue;
      } catch (IOException | TimeoutException | UncheckedIOException | ShutdownSignalException e) {
        return "could not ask RabbitMQ about the checker's queue " + queue + ": " + e;
      }
    }

    /** The checker's queue (server-named). */
    String queue() {
      return queue;
    }

    private long ready(Channel channel) {
      try {
        return channel.messageCount(queue);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    @Override
    public boolean failed() {
      return failure.get() != null;
    }

    @Override
    public void close() {
      closing = true;
      try {
        try (Channel cleanup = connection.createChannel()) {
          cleanup.exchangeDelete(exchange);
        }
        connection.close();
      } catch (IOException | TimeoutException e) {
        throw new UncheckedIOException(
            "could not delete exchange " + exchange + ": " + e.getMessage(),
            e instanceof IOException io ? io : new IOException(e));
      }
    }
  }

  @Override
  public String outage() {
    return "RabbitMQ cut off from the relays (TCP proxy; the shared broker keeps running)";
  }

  @Override
  public void interrupt() {
    proxy.cut();
  }

  @Override
  public void resume() {
    proxy.restore();
  }

  @Override
  public void close() {
    proxy.close();
  }
}

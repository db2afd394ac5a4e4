package dev.pgoutbox.example.chaos;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import dev.pgoutbox.example.infra.Secrets;
import dev.pgoutbox.example.infra.TcpProxy;
import dev.pgoutbox.example.verify.DeliveryChecker;
import java.net.URI;
import java.util.List;
import java.util.UUID;

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
  public AutoCloseable consume(DeliveryChecker checker) throws Exception {
    Connection connection = factory.newConnection("pgoutbox-chaos-checker");
    Channel channel = connection.createChannel();
    channel.exchangeDeclare(exchange, BuiltinExchangeType.TOPIC, false, false, null);
    String queue = channel.queueDeclare("", false, true, true, null).getQueue();
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
        });
    return () -> {
      try (Channel cleanup = connection.createChannel()) {
        cleanup.exchangeDelete(exchange);
      }
      connection.close();
    };
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

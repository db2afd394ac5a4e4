package dev.pgoutbox.relay.testing;

import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
import java.io.IOException;

/** Reading back what a test published to the test RabbitMQ, the one way the wire tests share. */
public final class RabbitReadBack {

  private RabbitReadBack() {}

  /** A connection factory for the test broker: 127.0.0.1, guest/guest. */
  public static ConnectionFactory localFactory() {
    ConnectionFactory factory = new ConnectionFactory();
    factory.setHost("127.0.0.1");
    factory.setUsername("guest");
    factory.setPassword("guest");
    return factory;
  }

  /**
   * Declares {@code exchange} (topic, auto-deleted) and a server-named exclusive queue bound to it
   * for every routing key ({@code #}); returns the queue's name.
   */
  public static String boundQueue(Channel channel, String exchange) throws IOException {
    channel.exchangeDeclare(exchange, BuiltinExchangeType.TOPIC, false, true, null);
    String queue = channel.queueDeclare("", false, true, true, null).getQueue();
    channel.queueBind(queue, exchange, "#");
    return queue;
  }
}

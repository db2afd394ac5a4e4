package dev.pgoutbox.samples.orders;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.amqp.core.Binding;
import org.springframework.amqp.core.BindingBuilder;
import org.springframework.amqp.core.Declarables;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.Queue;
import org.springframework.amqp.core.QueueBuilder;
import org.springframework.amqp.core.TopicExchange;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The consumer side: the exchange the relay publishes to, a queue for {@code order.placed}, and a
 * listener. The event id arrives as the AMQP {@code message-id}, the key a consumer deduplicates
 * redeliveries on (pgoutbox's {@code Inbox} does it in the consumer's transaction).
 */
@Configuration
public class OrderPlacedListener {

  private static final Logger LOG = LoggerFactory.getLogger(OrderPlacedListener.class);

  private final List<String> received = new CopyOnWriteArrayList<>();

  @Bean
  Declarables ordersTopology(
      @Value("${orders.exchange}") String exchange, @Value("${orders.queue}") String queue) {
    TopicExchange topic = new TopicExchange(exchange);
    Queue placed = QueueBuilder.durable(queue).build();
    Binding binding = BindingBuilder.bind(placed).to(topic).with("order.placed");
    return new Declarables(topic, placed, binding);
  }

  @RabbitListener(queues = "${orders.queue}")
  void onOrderPlaced(Message message) {
    String eventId = message.getMessageProperties().getMessageId();
    LOG.info(
        "Received order.placed {}: {}",
        eventId,
        new String(message.getBody(), StandardCharsets.UTF_8));
    received.add(eventId);
  }

  /** The event ids received so far, oldest first. */
  public List<String> receivedEventIds() {
    return List.copyOf(received);
  }
}

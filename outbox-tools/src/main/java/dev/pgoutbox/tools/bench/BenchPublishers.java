package dev.pgoutbox.tools.bench;

import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
import com.sun.net.httpserver.HttpServer;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.kafka.KafkaPublisher;
import dev.pgoutbox.relay.nats.NatsPublisher;
import dev.pgoutbox.relay.nats.NatsRouting;
import dev.pgoutbox.relay.rabbitmq.RabbitMqPublisher;
import dev.pgoutbox.relay.rabbitmq.RabbitMqRouting;
import dev.pgoutbox.relay.webhook.WebhookPublisher;
import dev.pgoutbox.testing.EmbeddedKafka;
import io.nats.client.JetStreamManagement;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import picocli.CommandLine.Option;

/**
 * The publishers a drain can use: {@code noop} (no broker: the relay's own cost), or a real broker
 * through pgoutbox's publisher for it. Brokers default to the local ones; Kafka to an embedded
 * single-node broker started for the run.
 */
public final class BenchPublishers {

  @Option(
      names = "--publisher",
      defaultValue = "noop",
      description = "noop, kafka, rabbitmq, nats or webhook (default ${DEFAULT-VALUE})")
  String publisher;

  @Option(names = "--kafka", description = "Kafka bootstrap servers (default: an embedded broker)")
  String kafka;

  @Option(
      names = "--rabbitmq",
      defaultValue = "amqp://guest:guest@127.0.0.1:5672",
      description = "RabbitMQ URI (default ${DEFAULT-VALUE})")
  String rabbitmq;

  @Option(
      names = "--nats",
      defaultValue = "nats://127.0.0.1:4222",
      description = "NATS with JetStream (default ${DEFAULT-VALUE})")
  String nats;

  /** A publisher factory for the chosen broker, and what must be closed after the run. */
  Session open() throws Exception {
    return switch (publisher) {
      case "noop" -> new Session(Drains.PublisherFactory.noop(), List.of());
      case "kafka" -> kafka();
      case "rabbitmq" -> rabbitmq();
      case "nats" -> nats();
      case "webhook" -> webhook();
      default ->
          throw new IllegalArgumentException(
              "--publisher must be noop, kafka, rabbitmq, nats or webhook, was " + publisher);
    };
  }

  private Session kafka() {
    List<AutoCloseable> resources = new ArrayList<>();
    String servers = kafka;
    if (servers == null) {
      EmbeddedKafka broker = EmbeddedKafka.start();
      resources.add(broker);
      servers = broker.bootstrapServers();
    }
    String bootstrap = servers;
    return new Session(
        deliveries -> recording(deliveries, KafkaPublisher.builder(bootstrap).build()), resources);
  }

  private Session rabbitmq() throws Exception {
    ConnectionFactory factory = new ConnectionFactory();
    factory.setUri(rabbitmq);
    String exchange = "pgoutbox.bench." + UUID.randomUUID();
    com.rabbitmq.client.Connection admin = factory.newConnection("pgoutbox-bench-admin");
    Channel channel = admin.createChannel();
    channel.exchangeDeclare(exchange, BuiltinExchangeType.TOPIC, false, true, null);
    String queue = channel.queueDeclare("", false, true, true, null).getQueue();
    channel.queueBind(queue, exchange, "#");
    return new Session(
        deliveries ->
            recording(
                deliveries,
                RabbitMqPublisher.builder(factory, RabbitMqRouting.byEventType(exchange)).build()),
        List.of(admin));
  }

  private Session nats() throws Exception {
    io.nats.client.Connection admin = Nats.connect(nats);
    String stream = "pgoutbox-bench-" + UUID.randomUUID().toString().substring(0, 8);
    JetStreamManagement management = admin.jetStreamManagement();
    management.addStream(
        StreamConfiguration.builder()
            .name(stream)
            .subjects(stream + ".>")
            .storageType(StorageType.File)
            .build());
    Options options = new Options.Builder().server(nats).maxReconnects(-1).build();
    return new Session(
        deliveries ->
            recording(
                deliveries,
                NatsPublisher.builder(options).routing(NatsRouting.byTypes(stream)).build()),
        List.of(() -> management.deleteStream(stream), admin::close));
  }

  private Session webhook() throws Exception {
    ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
    HttpServer server =
        HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 1024);
    server.setExecutor(executor);
    server.createContext(
        "/events",
        exchange -> {
          exchange.getRequestBody().readAllBytes();
          exchange.sendResponseHeaders(204, -1);
          exchange.close();
        });
    server.start();
    URI endpoint = URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/events");
    return new Session(
        deliveries ->
            recording(deliveries, WebhookPublisher.builder(endpoint).maxConcurrency(64).build()),
        List.of(() -> server.stop(0), executor::shutdownNow));
  }

  /** Records what the broker acknowledged, in answer order, for the delivery check. */
  private static Publisher recording(Deliveries deliveries, Publisher broker) {
    return new Publisher() {
      @Override
      public CompletionStage<List<PublishResult>> publish(List<OutboxMessage> batch) {
        return broker
            .publish(batch)
            .thenApply(
                results -> {
                  List<OutboxMessage> published = new ArrayList<>(batch.size());
                  for (int i = 0; i < batch.size(); i++) {
                    if (results.get(i) instanceof PublishResult.Published) {
                      published.add(batch.get(i));
                    }
                  }
                  deliveries.addAll(published);
                  return results;
                });
      }

      @Override
      public void close() {
        broker.close();
      }
    };
  }

  /** A factory of publishers, and the broker-side resources to close after the run. */
  record Session(Drains.PublisherFactory factory, List<AutoCloseable> resources)
      implements AutoCloseable {
    @Override
    public void close() {
      for (AutoCloseable resource : resources) {
        try {
          resource.close();
        } catch (Exception e) {
          System.err.println("bench: could not release " + resource + ": " + e);
        }
      }
    }
  }
}

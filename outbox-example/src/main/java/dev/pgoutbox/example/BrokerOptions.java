package dev.pgoutbox.example;

import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Option;

/** The broker options of {@code serve}: one of Kafka, RabbitMQ or NATS. */
final class BrokerOptions {

  @Option(names = "--kafka", paramLabel = "HOST:PORT", description = "Kafka bootstrap servers")
  @Nullable String kafka;

  @Option(
      names = "--rabbitmq",
      paramLabel = "URI",
      description = "RabbitMQ URI, e.g. amqp://guest:guest@localhost:5672")
  @Nullable String rabbitmq;

  @Option(
      names = "--nats",
      paramLabel = "URL",
      description = "NATS URL (JetStream), e.g. nats://localhost:4222")
  @Nullable String nats;
}

package dev.pgoutbox.example.orders;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.testing.Secrets;

/**
 * Which broker the service publishes to and consumes from.
 *
 * @param kind the broker
 * @param address {@code host:port} for Kafka, an {@code amqp://} URI for RabbitMQ, a {@code
 *     nats://} URL for NATS; empty for the embedded Kafka
 */
public record BrokerChoice(Kind kind, String address) {

  /** The brokers the example speaks to. */
  public enum Kind {
    /** A single-node Kafka started inside this JVM. */
    EMBEDDED_KAFKA,
    /** An existing Kafka cluster. */
    KAFKA,
    /** An existing RabbitMQ. */
    RABBITMQ,
    /** An existing NATS server with JetStream. */
    NATS
  }

  /** Checks the components. */
  public BrokerChoice {
    requireNonNull(kind, "kind");
    requireNonNull(address, "address");
    if (kind != Kind.EMBEDDED_KAFKA && address.isBlank()) {
      throw new IllegalArgumentException(kind + " needs an address");
    }
  }

  /** The kind and the address, with any password in the address masked. */
  @Override
  public String toString() {
    return "BrokerChoice[kind=" + kind + ", address=" + Secrets.mask(address) + "]";
  }

  /** The embedded Kafka: the default. */
  public static BrokerChoice embeddedKafka() {
    return new BrokerChoice(Kind.EMBEDDED_KAFKA, "");
  }
}

package dev.pgoutbox.relay;

import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The OpenTelemetry messaging attribute names a {@link Publisher} fills in ({@link
 * Publisher#traceAttributes}, {@link PublishResult#published(java.util.Map)}), and the server
 * address and port every publisher reports. Part of the publisher SPI: the broker modules
 * (pgoutbox-kafka, -rabbitmq, -nats, -webhook) use it, and so can a host's own publisher. Stateless
 * and thread-safe.
 */
public final class SpanAttributes {

  /** {@code server.address}. */
  public static final String SERVER_ADDRESS = "server.address";

  /** {@code server.port}. */
  public static final String SERVER_PORT = "server.port";

  /** {@code messaging.client.id}. */
  public static final String CLIENT_ID = "messaging.client.id";

  /** {@code messaging.kafka.message.key}. */
  public static final String KAFKA_MESSAGE_KEY = "messaging.kafka.message.key";

  /** {@code messaging.kafka.offset}. */
  public static final String KAFKA_OFFSET = "messaging.kafka.offset";

  /** {@code messaging.destination.partition.id}. */
  public static final String PARTITION_ID = "messaging.destination.partition.id";

  /** {@code messaging.rabbitmq.destination.routing_key}. */
  public static final String RABBITMQ_ROUTING_KEY = "messaging.rabbitmq.destination.routing_key";

  private SpanAttributes() {}

  /**
   * {@code server.address} and {@code server.port} of {@code host} and {@code port} (a port below 1
   * is left out); empty when the host is unknown.
   */
  public static Map<String, Object> server(@Nullable String host, int port) {
    if (host == null || host.isEmpty()) {
      return Map.of();
    }
    Map<String, Object> server = new LinkedHashMap<>(4);
    server.put(SERVER_ADDRESS, host);
    if (port > 0) {
      server.put(SERVER_PORT, (long) port);
    }
    return server;
  }

  /**
   * The server of the first entry of a Kafka-style list of {@code host:port} ({@code
   * broker-1:9092,broker-2:9092}, an optional {@code SCHEME://}, IPv6 in brackets); empty when it
   * cannot be read.
   */
  public static Map<String, Object> firstServer(String servers) {
    String first = servers.split(",", 2)[0].strip();
    int scheme = first.indexOf("://");
    if (scheme >= 0) {
      first = first.substring(scheme + 3);
    }
    int colon = first.lastIndexOf(':');
    String host = colon < 0 ? first : first.substring(0, colon);
    int port = -1;
    if (colon >= 0 && !first.endsWith("]")) {
      try {
        port = Integer.parseInt(first.substring(colon + 1));
      } catch (NumberFormatException e) {
        return Map.of();
      }
    } else {
      host = first;
    }
    if (host.startsWith("[") && host.endsWith("]")) {
      host = host.substring(1, host.length() - 1);
    }
    return server(host, port);
  }
}

package dev.pgoutbox.core.consumer;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.core.OutboxException;
import java.nio.charset.StandardCharsets;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

/**
 * Reads the event id back from a record {@code dev.pgoutbox.relay.kafka.KafkaPublisher} sent, for
 * the consumer's inbox. The id travels in the {@value #HEADER} header as the UUID's text in UTF-8.
 * Needs {@code org.apache.kafka:kafka-clients} (an optional dependency of this module).
 *
 * <pre>{@code
 * for (ConsumerRecord<String, byte[]> record : consumer.poll(Duration.ofSeconds(1))) {
 *   inbox.handleOnce(tx, "billing", KafkaEventIds.eventId(record), () -> bill(record));
 * }
 * }</pre>
 */
public final class KafkaEventIds {

  /** The header that carries the event id: {@value}. */
  public static final String HEADER = "event_id";

  private KafkaEventIds() {}

  /**
   * The event id of {@code record}.
   *
   * @throws OutboxException if the header is missing or is not a UUID
   */
  public static UUID eventId(ConsumerRecord<?, ?> record) {
    requireNonNull(record, "record");
    try {
      return eventId(record.headers());
    } catch (OutboxException e) {
      throw new OutboxException(
          e.getMessage()
              + " ("
              + record.topic()
              + "-"
              + record.partition()
              + "@"
              + record.offset()
              + ")",
          e.getCause());
    }
  }

  /**
   * The event id in {@code headers} (the last {@value #HEADER} header).
   *
   * @throws OutboxException if the header is missing or is not a UUID
   */
  public static UUID eventId(Headers headers) {
    requireNonNull(headers, "headers");
    Header header = headers.lastHeader(HEADER);
    if (header == null || header.value() == null) {
      throw new OutboxException(
          "Kafka record has no " + HEADER + " header; was it published by pgoutbox?");
    }
    String text = new String(header.value(), StandardCharsets.UTF_8);
    try {
      return UUID.fromString(text);
    } catch (IllegalArgumentException e) {
      throw new OutboxException(HEADER + " header must be a UUID, was '" + text + "'", e);
    }
  }
}

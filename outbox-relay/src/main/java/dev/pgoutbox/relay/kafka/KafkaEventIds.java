package dev.pgoutbox.relay.kafka;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.core.OutboxException;
import java.nio.charset.StandardCharsets;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

/**
 * Reads the event id back from a record a {@link KafkaPublisher} sent, for the consumer's inbox.
 * The id travels in the {@value KafkaPublisher#EVENT_ID_HEADER} header as the UUID's text in UTF-8.
 *
 * <pre>{@code
 * for (ConsumerRecord<String, byte[]> record : consumer.poll(Duration.ofSeconds(1))) {
 *   inbox.handleOnce(tx, "billing", KafkaEventIds.eventId(record), () -> bill(record));
 * }
 * }</pre>
 */
public final class KafkaEventIds {

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
   * The event id in {@code headers} (the last {@value KafkaPublisher#EVENT_ID_HEADER} header).
   *
   * @throws OutboxException if the header is missing or is not a UUID
   */
  public static UUID eventId(Headers headers) {
    requireNonNull(headers, "headers");
    Header header = headers.lastHeader(KafkaPublisher.EVENT_ID_HEADER);
    if (header == null || header.value() == null) {
      throw new OutboxException(
          "Kafka record has no "
              + KafkaPublisher.EVENT_ID_HEADER
              + " header; was it published by pgoutbox?");
    }
    String text = new String(header.value(), StandardCharsets.UTF_8);
    try {
      return UUID.fromString(text);
    } catch (IllegalArgumentException e) {
      throw new OutboxException(
          KafkaPublisher.EVENT_ID_HEADER + " header must be a UUID, was '" + text + "'", e);
    }
  }
}

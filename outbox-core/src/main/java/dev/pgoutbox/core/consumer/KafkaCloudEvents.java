package dev.pgoutbox.core.consumer;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.core.OutboxException;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;

/**
 * Reads a {@link CloudEvent} from a record {@code dev.pgoutbox.relay.kafka.KafkaPublisher} sent
 * with the CloudEvents envelope, in binary content mode as the CloudEvents Kafka binding puts it:
 * attributes in headers {@value #PREFIX}{@code id}, {@code ce_source}, {@code ce_specversion},
 * {@code ce_type}, {@code ce_subject}, {@code ce_time}, the data content type in {@code
 * content-type}, the data as the record's value. Needs {@code kafka-clients}.
 *
 * <pre>{@code
 * CloudEvent event = KafkaCloudEvents.read(record);
 * inbox.handleOnce(tx, "billing", event.eventId(), () -> bill(event.type(), event.data()));
 * }</pre>
 */
public final class KafkaCloudEvents {

  /** The prefix of attribute headers in the Kafka binding: {@value}. */
  public static final String PREFIX = "ce_";

  /** The header with {@code datacontenttype} in the Kafka binding: {@value}. */
  public static final String CONTENT_TYPE = "content-type";

  private KafkaCloudEvents() {}

  /**
   * The CloudEvent in {@code record}.
   *
   * @throws OutboxException if a required attribute is missing or malformed
   */
  public static CloudEvent read(ConsumerRecord<?, byte[]> record) {
    requireNonNull(record, "record");
    String where =
        "Kafka record " + record.topic() + "-" + record.partition() + "@" + record.offset();
    byte[] value = record.value() == null ? new byte[0] : record.value();
    return CloudEvent.fromBinary(
        PREFIX, name -> text(record, name), text(record, CONTENT_TYPE), value, where);
  }

  private static String text(ConsumerRecord<?, ?> record, String name) {
    Header header = record.headers().lastHeader(name);
    return header == null || header.value() == null
        ? null
        : new String(header.value(), StandardCharsets.UTF_8);
  }
}

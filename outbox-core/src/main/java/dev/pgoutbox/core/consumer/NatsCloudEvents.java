package dev.pgoutbox.core.consumer;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.core.OutboxException;
import io.nats.client.Message;
import io.nats.client.impl.Headers;

/**
 * Reads a {@link CloudEvent} from a message {@code dev.pgoutbox.relay.nats.NatsPublisher} sent with
 * the CloudEvents envelope, in binary content mode as the CloudEvents NATS binding puts it:
 * attributes in headers {@value #PREFIX}{@code id}, {@code ce-source}, {@code ce-specversion},
 * {@code ce-type}, {@code ce-subject}, {@code ce-time}, the data content type in {@value
 * #CONTENT_TYPE}, the data as the message's data. Needs {@code jnats}.
 */
public final class NatsCloudEvents {

  /** The prefix of attribute headers in the NATS binding: {@value}. */
  public static final String PREFIX = "ce-";

  /** The header with {@code datacontenttype}: {@value}. */
  public static final String CONTENT_TYPE = "content-type";

  private NatsCloudEvents() {}

  /**
   * The CloudEvent in {@code message}.
   *
   * @throws OutboxException if a required attribute is missing or malformed
   */
  public static CloudEvent read(Message message) {
    requireNonNull(message, "message");
    Headers headers = message.getHeaders();
    String where = "NATS message on " + message.getSubject();
    return CloudEvent.fromBinary(
        PREFIX,
        name -> headers == null ? null : headers.getFirst(name),
        headers == null ? null : headers.getFirst(CONTENT_TYPE),
        message.getData() == null ? new byte[0] : message.getData(),
        where);
  }
}

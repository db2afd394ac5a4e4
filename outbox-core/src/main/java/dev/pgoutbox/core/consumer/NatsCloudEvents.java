package dev.pgoutbox.core.consumer;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.core.OutboxException;
import io.nats.client.Message;
import io.nats.client.impl.Headers;
import java.util.List;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * Reads a {@link CloudEvent} from a message {@code dev.pgoutbox.relay.nats.NatsPublisher} sent with
 * the CloudEvents envelope, in either content mode of the CloudEvents NATS binding:
 *
 * <ul>
 *   <li><b>structured</b> (the released binding, v1.0.2, and pgoutbox's default for NATS): the data
 *       is the whole event in the JSON event format, the payload under {@code data}; the message
 *       carries {@value #CONTENT_TYPE}{@code : }{@value #STRUCTURED_CONTENT_TYPE}, the draft's mark
 *       of structured mode;
 *   <li><b>binary</b> (the binding's draft text, 1.0.3-wip): attributes in headers {@value
 *       #PREFIX}{@code id}, {@code ce-source}, {@code ce-specversion}, {@code ce-type}, {@code
 *       ce-subject}, {@code ce-time}, {@code ce-datacontenttype}, each percent-encoded (§3.1.3.2,
 *       decoded here with {@link HeaderValues#percentDecode}); the data is the message's data.
 * </ul>
 *
 * <p>A message whose {@code Content-Type} header (any case) starts with {@code
 * application/cloudevents} is read as structured, any other as binary, as the draft says. Needs
 * {@code jnats}.
 */
public final class NatsCloudEvents {

  /** The prefix of attribute headers in the NATS binding's binary mode: {@value}. */
  public static final String PREFIX = "ce-";

  /** The header that marks structured mode: {@value}. */
  public static final String CONTENT_TYPE = "Content-Type";

  /** The media type of a structured-mode message: {@value}. */
  public static final String STRUCTURED_CONTENT_TYPE = "application/cloudevents+json";

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
    byte[] data = message.getData() == null ? new byte[0] : message.getData();
    String contentType = first(headers, CONTENT_TYPE);
    if (contentType != null
        && contentType.toLowerCase(Locale.ROOT).startsWith("application/cloudevents")) {
      return CloudEvent.fromStructured(data, where);
    }
    return CloudEvent.fromBinary(
        PREFIX,
        name -> CloudEvent.percentDecoded(first(headers, name), name, where),
        CloudEvent.percentDecoded(
            first(headers, PREFIX + "datacontenttype"), "ce-datacontenttype", where),
        data,
        where);
  }

  /** NATS header names are case-insensitive (the NATS design); jnats looks them up by case. */
  private static @Nullable String first(@Nullable Headers headers, String name) {
    if (headers == null) {
      return null;
    }
    List<String> values = headers.getIgnoreCase(name);
    return values == null || values.isEmpty() ? null : values.get(0);
  }
}

package dev.pgoutbox.core.consumer;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.core.OutboxException;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Reads a {@link CloudEvent} from a request {@code dev.pgoutbox.relay.webhook.WebhookPublisher}
 * sent with the CloudEvents envelope, in either content mode of the CloudEvents HTTP binding:
 * structured ({@code Content-Type: application/cloudevents+json}, the whole event as the JSON body)
 * or binary (attributes in headers {@value #PREFIX}{@code id}, {@code ce-source}, {@code
 * ce-specversion}, {@code ce-type}, {@code ce-subject}, {@code ce-time}, the data as the body).
 * Binary-mode values are percent-decoded as the binding says (§3.1.3.2, {@link
 * HeaderValues#percentDecode}): double-quoted values unquoted, then one round of decoding. Needs
 * nothing beyond this module.
 *
 * <pre>{@code
 * byte[] body = exchange.getRequestBody().readAllBytes();
 * CloudEvent event = WebhookCloudEvents.read(exchange.getRequestHeaders(), body);
 * }</pre>
 */
public final class WebhookCloudEvents {

  /** The prefix of attribute headers in binary mode: {@value}. */
  public static final String PREFIX = "ce-";

  /** The media type of the structured mode's JSON format: {@value}. */
  public static final String STRUCTURED_CONTENT_TYPE = "application/cloudevents+json";

  private WebhookCloudEvents() {}

  /**
   * The CloudEvent in a request, given its headers (looked up without regard to case) and body.
   *
   * @throws OutboxException if a required attribute is missing or malformed
   */
  public static CloudEvent read(Map<String, ? extends List<String>> headers, byte[] body) {
    requireNonNull(headers, "headers");
    requireNonNull(body, "body");
    String where = "webhook request";
    String contentType = HttpHeaderLookup.first(headers, "Content-Type");
    if (contentType != null
        && contentType.toLowerCase(Locale.ROOT).startsWith(STRUCTURED_CONTENT_TYPE)) {
      return CloudEvent.fromStructured(body, "structured CloudEvent");
    }
    return CloudEvent.fromBinary(
        PREFIX,
        name -> CloudEvent.percentDecoded(HttpHeaderLookup.first(headers, name), name, where),
        contentType,
        body,
        where);
  }
}

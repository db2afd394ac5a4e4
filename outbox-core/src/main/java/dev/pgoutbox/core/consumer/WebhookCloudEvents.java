package dev.pgoutbox.core.consumer;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgoutbox.core.OutboxException;
import java.io.IOException;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Reads a {@link CloudEvent} from a request {@code dev.pgoutbox.relay.webhook.WebhookPublisher}
 * sent with the CloudEvents envelope, in either content mode of the CloudEvents HTTP binding:
 * structured ({@code Content-Type: application/cloudevents+json}, the whole event as the JSON body)
 * or binary (attributes in headers {@value #PREFIX}{@code id}, {@code ce-source}, {@code
 * ce-specversion}, {@code ce-type}, {@code ce-subject}, {@code ce-time}, the data as the body).
 * Needs nothing beyond this module.
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

  private static final ObjectMapper JSON = new ObjectMapper();

  private WebhookCloudEvents() {}

  /**
   * The CloudEvent in a request, given its headers (looked up without regard to case) and body.
   *
   * @throws OutboxException if a required attribute is missing or malformed
   */
  public static CloudEvent read(Map<String, ? extends List<String>> headers, byte[] body) {
    requireNonNull(headers, "headers");
    requireNonNull(body, "body");
    String contentType = HttpHeaderLookup.first(headers, "Content-Type");
    if (contentType != null
        && contentType.toLowerCase(Locale.ROOT).startsWith(STRUCTURED_CONTENT_TYPE)) {
      return structured(body);
    }
    return CloudEvent.fromBinary(
        PREFIX,
        name -> HttpHeaderLookup.first(headers, name),
        contentType,
        body,
        "webhook request");
  }

  private static CloudEvent structured(byte[] body) {
    JsonNode event;
    try {
      event = JSON.readTree(body);
    } catch (IOException e) {
      throw new OutboxException("structured CloudEvent is not valid JSON: " + e.getMessage(), e);
    }
    if (event == null || !event.isObject()) {
      throw new OutboxException("structured CloudEvent must be a JSON object");
    }
    String specVersion = text(event, "specversion");
    if (!CloudEvent.SPEC_VERSION.equals(specVersion)) {
      throw new OutboxException(
          "structured CloudEvent has specversion "
              + specVersion
              + ", not "
              + CloudEvent.SPEC_VERSION);
    }
    JsonNode data = event.get("data");
    return new CloudEvent(
        specVersion,
        required(event, "id"),
        required(event, "source"),
        required(event, "type"),
        text(event, "subject"),
        CloudEvent.time(text(event, "time"), "structured CloudEvent"),
        text(event, "datacontenttype"),
        data == null ? "null" : data.toString());
  }

  private static @Nullable String text(JsonNode event, String name) {
    JsonNode value = event.get(name);
    return value == null || value.isNull() ? null : value.asText();
  }

  private static String required(JsonNode event, String name) {
    String value = text(event, name);
    if (value == null || value.isEmpty()) {
      throw new OutboxException("structured CloudEvent has no " + name);
    }
    return value;
  }
}

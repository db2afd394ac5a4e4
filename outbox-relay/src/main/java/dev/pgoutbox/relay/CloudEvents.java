package dev.pgoutbox.relay;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import dev.pgoutbox.core.consumer.HeaderValues;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The CloudEvents 1.0 envelope a publisher can put around each event, opt-in per publisher ({@code
 * cloudEvents(...)} on its builder). The attributes: {@code id} = event id, {@code source} = the
 * source given here, {@code type} = event type, {@code subject} = aggregate id, {@code time} = when
 * the event was written (RFC 3339), {@code specversion} {@code 1.0}, {@code datacontenttype} {@code
 * application/json}; the data is the payload JSON.
 *
 * <p><b>Binary mode</b> (every publisher): the attributes travel as headers named as each
 * CloudEvents protocol binding says, the body stays the payload as stored: Kafka {@code ce_id},
 * {@code ce_source}... and {@code content-type}, values UTF-8 as the Kafka binding says; RabbitMQ
 * (AMQP binding) {@code cloudEvents:id}... in the message headers, {@code content-type} property;
 * NATS (the binding's draft, 1.0.3-wip) {@code ce-id}... and {@code ce-datacontenttype}, values
 * percent-encoded; webhook (HTTP binding) {@code ce-id}... with {@code Content-Type}, values
 * percent-encoded. <b>Structured mode</b> (webhook and NATS; the only mode of the released NATS
 * binding, v1.0.2): the body is the whole event as JSON ({@code Content-Type:
 * application/cloudevents+json}), the payload under {@code data}. The publisher's own headers
 * (event id, type, aggregate, trace context) are sent as before in either mode. Consumers read it
 * back with {@code dev.pgoutbox.core.consumer.*CloudEvents}, or with any CloudEvents SDK.
 *
 * <p><b>Header values.</b> The HTTP binding (§3.1.3.2) and the NATS draft say every {@code ce-*}
 * value is percent-encoded: space, {@code "}, {@code %} and everything outside U+0021..U+007E.
 * {@link #percentEncodedAttributes} gives them so; {@link
 * dev.pgoutbox.core.consumer.HeaderValues#percentDecode} reads them back.
 *
 * <pre>{@code
 * KafkaPublisher.builder(servers).cloudEvents(CloudEvents.binary("/orders-service")).build();
 * NatsPublisher.builder(options).cloudEvents(CloudEvents.structured("/orders-service")).build();
 * WebhookPublisher.builder(endpoint).cloudEvents(CloudEvents.structured("/orders-service")).build();
 * }</pre>
 *
 * <p>Immutable and thread-safe.
 */
public final class CloudEvents {

  /** The CloudEvents version written: {@value}. */
  public static final String SPEC_VERSION = "1.0";

  /** The content type of the data (the payload JSON): {@value}. */
  public static final String DATA_CONTENT_TYPE = "application/json";

  /** The content type of a structured-mode body: {@value}. */
  public static final String STRUCTURED_CONTENT_TYPE = "application/cloudevents+json";

  /** Longest {@code source}, in characters: {@value}. */
  public static final int MAX_SOURCE_LENGTH = 1000;

  private static final JsonFactory JSON = new JsonFactory();

  private final String source;
  private final boolean structured;

  private CloudEvents(String source, boolean structured) {
    this.source = checkSource(source);
    this.structured = structured;
  }

  /**
   * Binary content mode with {@code source} as every event's {@code source}.
   *
   * @throws IllegalArgumentException if {@code source} is not a non-empty URI-reference of at most
   *     {@value #MAX_SOURCE_LENGTH} characters
   */
  public static CloudEvents binary(String source) {
    return new CloudEvents(source, false);
  }

  /**
   * Structured content mode (the webhook and NATS publishers) with {@code source} as every event's
   * {@code source}.
   *
   * @throws IllegalArgumentException if {@code source} is not a non-empty URI-reference of at most
   *     {@value #MAX_SOURCE_LENGTH} characters
   */
  public static CloudEvents structured(String source) {
    return new CloudEvents(source, true);
  }

  /** The {@code source} attribute of every event. */
  public String source() {
    return source;
  }

  /** Whether this is structured content mode (else binary). */
  public boolean isStructured() {
    return structured;
  }

  /**
   * The context attributes of {@code message} by CloudEvents name ({@code specversion}, {@code id},
   * {@code source}, {@code type}, {@code subject}, {@code time}), without any binding's prefix;
   * {@code datacontenttype} is left to each binding's content-type header.
   */
  public Map<String, String> attributes(OutboxMessage message) {
    Map<String, String> attributes = new LinkedHashMap<>(8);
    attributes.put("specversion", SPEC_VERSION);
    attributes.put("id", message.id().toString());
    attributes.put("source", source);
    attributes.put("type", message.eventType());
    attributes.put("subject", message.aggregateId());
    attributes.put("time", message.createdAt().toString());
    return attributes;
  }

  /**
   * {@link #attributes} with each value percent-encoded as the CloudEvents HTTP binding (§3.1.3.2)
   * and the NATS binding's draft say, for {@code ce-*} headers.
   */
  public Map<String, String> percentEncodedAttributes(OutboxMessage message) {
    Map<String, String> attributes = attributes(message);
    attributes.replaceAll((name, value) -> HeaderValues.percentEncode(value));
    return attributes;
  }

  /** The structured-mode body of {@code message}: the event as JSON, the payload under data. */
  public String structuredBody(OutboxMessage message) {
    StringWriter out = new StringWriter(message.payload().length() + 256);
    try (JsonGenerator json = JSON.createGenerator(out)) {
      json.writeStartObject();
      for (Map.Entry<String, String> a : attributes(message).entrySet()) {
        json.writeStringField(a.getKey(), a.getValue());
      }
      json.writeStringField("datacontenttype", DATA_CONTENT_TYPE);
      json.writeFieldName("data");
      json.writeRawValue(message.payload()); // Valid JSON: jsonb gave it back.
      json.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out.toString();
  }

  /**
   * Refuses a structured envelope for a publisher that sends binary mode only.
   *
   * @throws IllegalArgumentException naming the publisher
   */
  public CloudEvents requireBinary(String publisher) {
    if (structured) {
      throw new IllegalArgumentException(
          "cloudEvents must be CloudEvents.binary(...) for "
              + publisher
              + ": structured mode is for the webhook and NATS publishers");
    }
    return this;
  }

  @Override
  public String toString() {
    return "CloudEvents[" + (structured ? "structured" : "binary") + ", source=" + source + "]";
  }

  private static String checkSource(String source) {
    requireNonNull(source, "source");
    if (source.isBlank() || source.length() > MAX_SOURCE_LENGTH) {
      throw new IllegalArgumentException(
          "source must be a non-empty URI-reference of at most "
              + MAX_SOURCE_LENGTH
              + " characters, was "
              + (source.isBlank() ? "blank" : source.length() + " characters"));
    }
    try {
      new URI(source);
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException(
          "source must be a URI-reference (e.g. /orders-service or urn:example:orders), was '"
              + source
              + "': "
              + e.getReason(),
          e);
    }
    return source;
  }
}

package dev.pgoutbox.core.consumer;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgoutbox.core.OutboxException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.UUID;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * A CloudEvent (CloudEvents 1.0) as a pgoutbox publisher with the CloudEvents envelope sends it,
 * read back by {@link KafkaCloudEvents}, {@link RabbitMqCloudEvents}, {@link NatsCloudEvents} or
 * {@link WebhookCloudEvents}. The attributes map an outbox event as follows: {@code id} = event id,
 * {@code source} = the publisher's configured source, {@code type} = event type, {@code subject} =
 * aggregate id, {@code time} = when the event was written, {@code datacontenttype} = {@code
 * application/json}, data = the payload JSON.
 *
 * @param specVersion {@code specversion}, {@value #SPEC_VERSION}
 * @param id {@code id}: the event id
 * @param source {@code source}
 * @param type {@code type}: the event type
 * @param subject {@code subject}: the aggregate id, when present
 * @param time {@code time}: when the event was written, when present
 * @param dataContentType {@code datacontenttype}, when present
 * @param data the event data as UTF-8 text (the payload JSON)
 */
public record CloudEvent(
    String specVersion,
    String id,
    String source,
    String type,
    @Nullable String subject,
    @Nullable OffsetDateTime time,
    @Nullable String dataContentType,
    String data) {

  /** The CloudEvents version pgoutbox writes: {@value}. */
  public static final String SPEC_VERSION = "1.0";

  private static final ObjectMapper JSON = new ObjectMapper();

  /** Checks the required attributes. */
  public CloudEvent {
    requireNonNull(specVersion, "specVersion");
    requireNonNull(id, "id");
    requireNonNull(source, "source");
    requireNonNull(type, "type");
    requireNonNull(data, "data");
  }

  /**
   * The id as a pgoutbox event id, for the inbox.
   *
   * @throws OutboxException if the id is not a UUID (the event was not sent by pgoutbox)
   */
  public UUID eventId() {
    try {
      return UUID.fromString(id);
    } catch (IllegalArgumentException e) {
      throw new OutboxException(
          "CloudEvent id must be a pgoutbox event id (a UUID), was '" + id + "'", e);
    }
  }

  /**
   * Reads the attributes from binary-mode headers: {@code header} gives the value of the header
   * named by {@code prefix} + attribute name, or null.
   */
  static CloudEvent fromBinary(
      String prefix,
      Function<String, @Nullable String> header,
      @Nullable String contentType,
      byte[] data,
      String where) {
    String specVersion = header.apply(prefix + "specversion");
    if (specVersion == null) {
      throw new OutboxException(
          where + " has no " + prefix + "specversion header: not a binary-mode CloudEvent");
    }
    if (!specVersion.equals(SPEC_VERSION)) {
      throw new OutboxException(
          where + " is a CloudEvent of specversion " + specVersion + ", not " + SPEC_VERSION);
    }
    return new CloudEvent(
        specVersion,
        required(header, prefix, "id", where),
        required(header, prefix, "source", where),
        required(header, prefix, "type", where),
        header.apply(prefix + "subject"),
        time(header.apply(prefix + "time"), where),
        contentType,
        new String(data, StandardCharsets.UTF_8));
  }

  static @Nullable OffsetDateTime time(@Nullable String text, String where) {
    if (text == null) {
      return null;
    }
    try {
      return OffsetDateTime.parse(text);
    } catch (DateTimeParseException e) {
      throw new OutboxException(
          where + " has a CloudEvent time that is not RFC 3339: '" + text + "'", e);
    }
  }

  private static String required(
      Function<String, @Nullable String> header, String prefix, String name, String where) {
    String value = header.apply(prefix + name);
    if (value == null || value.isEmpty()) {
      throw new OutboxException(where + " has no " + prefix + name + " header");
    }
    return value;
  }

  /**
   * {@code value} percent-decoded as the CloudEvents HTTP and NATS bindings say, or null.
   *
   * @throws OutboxException if it is not valid percent-encoded UTF-8
   */
  static @Nullable String percentDecoded(@Nullable String value, String header, String where) {
    if (value == null) {
      return null;
    }
    try {
      return HeaderValues.percentDecode(value);
    } catch (IllegalArgumentException e) {
      throw new OutboxException(where + " header " + header + ": " + e.getMessage(), e);
    }
  }

  static CloudEvent fromStructured(byte[] body, String where) {
    JsonNode event;
    try {
      event = JSON.readTree(body);
    } catch (IOException e) {
      throw new OutboxException(where + " is not valid JSON: " + e.getMessage(), e);
    }
    if (event == null || !event.isObject()) {
      throw new OutboxException(where + " must be a JSON object");
    }
    String specVersion = text(event, "specversion");
    if (!SPEC_VERSION.equals(specVersion)) {
      throw new OutboxException(
          where + " has specversion " + specVersion + ", not " + SPEC_VERSION);
    }
    JsonNode data = event.get("data");
    return new CloudEvent(
        specVersion,
        required(event, "id", where),
        required(event, "source", where),
        required(event, "type", where),
        text(event, "subject"),
        time(text(event, "time"), where),
        text(event, "datacontenttype"),
        data == null ? "null" : data.toString());
  }

  private static @Nullable String text(JsonNode event, String name) {
    JsonNode value = event.get(name);
    return value == null || value.isNull() ? null : value.asText();
  }

  private static String required(JsonNode event, String name, String where) {
    String value = text(event, name);
    if (value == null || value.isEmpty()) {
      throw new OutboxException(where + " has no " + name);
    }
    return value;
  }
}

package dev.pgoutbox.core.consumer;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.core.OutboxException;
import io.nats.client.Message;
import io.nats.client.impl.Headers;
import org.jspecify.annotations.Nullable;

/**
 * pgoutbox's own NATS headers ({@code event_type}, {@code aggregate_type}, {@code aggregate_id} and
 * every stored header), written and read back unchanged whatever they hold. NATS header values are
 * printable US-ASCII only (jnats refuses anything above U+007F, CR and LF), while the writer
 * accepts any text: a plain value ({@link HeaderValues#isPlain}) travels as it is, any other under
 * the name followed by {@code *} as an RFC 8187 ext-value ({@code aggregate_id*:
 * UTF-8''Z%C3%BCrich}). Needs {@code jnats}.
 *
 * <pre>{@code
 * String aggregateId = NatsHeaders.get(message, "aggregate_id");
 * }</pre>
 */
public final class NatsHeaders {

  private NatsHeaders() {}

  /** Puts {@code value} under {@code name}, or encoded under {@code name*} if it is not plain. */
  public static void put(Headers headers, String name, String value) {
    requireNonNull(headers, "headers");
    requireNonNull(name, "name");
    requireNonNull(value, "value");
    if (HeaderValues.isPlain(value)) {
      headers.put(name, value);
    } else {
      headers.put(name + "*", HeaderValues.extValue(value));
    }
  }

  /**
   * The value of header {@code name} in {@code message}, decoded from {@code name*} when it was
   * sent encoded; null when neither is present.
   *
   * @throws OutboxException if {@code name*} is not a valid ext-value
   */
  public static @Nullable String get(Message message, String name) {
    requireNonNull(message, "message");
    return get(message.getHeaders(), name);
  }

  /**
   * The value of header {@code name}, decoded from {@code name*} when it was sent encoded; null
   * when neither is present.
   *
   * @throws OutboxException if {@code name*} is not a valid ext-value
   */
  public static @Nullable String get(@Nullable Headers headers, String name) {
    requireNonNull(name, "name");
    if (headers == null) {
      return null;
    }
    String plain = headers.getFirst(name);
    if (plain != null) {
      return plain;
    }
    String encoded = headers.getFirst(name + "*");
    if (encoded == null) {
      return null;
    }
    try {
      return HeaderValues.fromExtValue(encoded);
    } catch (IllegalArgumentException e) {
      throw new OutboxException("NATS header " + name + "*: " + e.getMessage(), e);
    }
  }
}

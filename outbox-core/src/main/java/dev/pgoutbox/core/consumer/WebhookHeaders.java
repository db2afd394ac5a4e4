package dev.pgoutbox.core.consumer;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.core.OutboxException;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * pgoutbox's own webhook headers ({@code X-Pgoutbox-Event-Type}, {@code X-Pgoutbox-Aggregate-Type},
 * {@code X-Pgoutbox-Aggregate-Id} and every stored header), read back unchanged whatever they hold.
 * An HTTP header field carries printable US-ASCII safely (RFC 9110 §5.5: anything else is opaque
 * bytes a receiver may decode as it likes), while the writer accepts any text: a plain value
 * ({@link HeaderValues#isPlain}) travels as it is, any other under the name followed by {@code *}
 * as an RFC 8187 ext-value ({@code X-Pgoutbox-Aggregate-Id*: UTF-8''Z%C3%BCrich}). The same rule as
 * {@link NatsHeaders}; needs nothing beyond this module.
 *
 * <pre>{@code
 * String aggregateId =
 *     WebhookHeaders.get(exchange.getRequestHeaders(), "X-Pgoutbox-Aggregate-Id"); // "Zürich"
 * }</pre>
 *
 * <p>Stateless and thread-safe.
 */
public final class WebhookHeaders {

  private WebhookHeaders() {}

  /**
   * The value of header {@code name} (looked up without regard to case), decoded from {@code name*}
   * when it was sent encoded; null when neither is present.
   *
   * @throws OutboxException if {@code name*} is not a valid ext-value
   */
  public static @Nullable String get(Map<String, ? extends List<String>> headers, String name) {
    requireNonNull(headers, "headers");
    requireNonNull(name, "name");
    String plain = HttpHeaderLookup.first(headers, name);
    if (plain != null) {
      return plain;
    }
    String encoded = HttpHeaderLookup.first(headers, name + "*");
    if (encoded == null) {
      return null;
    }
    try {
      return HeaderValues.fromExtValue(encoded.strip());
    } catch (IllegalArgumentException e) {
      throw new OutboxException("webhook header " + name + "*: " + e.getMessage(), e);
    }
  }
}

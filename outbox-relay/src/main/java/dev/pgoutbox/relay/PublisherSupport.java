package dev.pgoutbox.relay;

import dev.pgoutbox.core.internal.HeaderNames;
import dev.pgoutbox.relay.internal.Failures;
import dev.pgoutbox.relay.internal.UrlRedaction;
import java.net.URI;

/**
 * Helpers for {@link Publisher} implementations: the rules the broker modules (pgoutbox-kafka,
 * -rabbitmq, -nats, -webhook) share with the relay, written once here so that a host's own
 * publisher can follow them too. Stateless and thread-safe.
 *
 * <pre>{@code
 * Throwable cause = PublisherSupport.unwrap(error); // the broker's exception, not the future's
 * return PublishResult.retryable("POST " + PublisherSupport.redact(uri) + ": " + cause);
 * }</pre>
 */
public final class PublisherSupport {

  private PublisherSupport() {}

  /**
   * {@code error} without the {@code CompletionException} and {@code ExecutionException} wrappers a
   * future adds; a wrapper without a cause is returned as it is.
   */
  public static Throwable unwrap(Throwable error) {
    return Failures.unwrap(error);
  }

  /**
   * {@code uri} as text with its credentials masked: the user info, every query value and the
   * fragment become {@code ***}; scheme, host, port and path stay.
   */
  public static String redact(URI uri) {
    return UrlRedaction.url(uri);
  }

  /**
   * {@code text} with every URL in it masked as {@link #redact(URI)} does; text without a URL is
   * returned unchanged. The relay passes every failure reason through this before it stores or logs
   * it.
   */
  public static String redactUrls(String text) {
    return UrlRedaction.text(text);
  }

  /**
   * Whether {@code name} (any case) is a header the publishers' envelope writes itself (event id,
   * type and aggregate, CloudEvents {@code ce_}/{@code ce-} attributes, the webhook's id, signature
   * and {@code X-Pgoutbox-} headers, HTTP connection headers): a stored header of that name is not
   * copied onto the message, so it cannot forge the envelope.
   */
  public static boolean isReservedHeader(String name) {
    return HeaderNames.reserved(name);
  }
}

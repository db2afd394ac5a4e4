package dev.pgoutbox.relay.internal;

import dev.pgoutbox.relay.RelayConfig;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * The core's rules for a failed publish, the same for the table relay's batches and the WAL relay's
 * parking: when it is tried again, and the text stored for it.
 */
public final class FailureRules {

  private FailureRules() {}

  /**
   * The backoff for {@code attempts}, or the publisher's hint when longer: the hint cut at {@link
   * RelayConfig#maxRetryHint()}, everything cut at {@link RelayConfig#MAX_RETRY_DELAY}, so the
   * stored {@code retry_after} is always a reachable time. Both sources' failures go through it.
   */
  public static Duration retryDelay(RelayConfig config, int attempts, @Nullable Duration hint) {
    long backoffMillis = config.backoff().apply(attempts);
    Duration delay = Duration.ofMillis(Math.max(0, backoffMillis));
    if (hint != null && hint.compareTo(delay) > 0) {
      delay = hint.compareTo(config.maxRetryHint()) > 0 ? config.maxRetryHint() : hint;
      if (delay.compareTo(Duration.ofMillis(Math.max(0, backoffMillis))) < 0) {
        delay = Duration.ofMillis(Math.max(0, backoffMillis));
      }
    }
    return delay.compareTo(RelayConfig.MAX_RETRY_DELAY) > 0 ? RelayConfig.MAX_RETRY_DELAY : delay;
  }

  /**
   * The text stored in {@code last_error} and logged for a failure reason of any publisher: URL
   * credentials redacted ({@link UrlRedaction}), NUL replaced, cut at {@code max} characters. The
   * relay's one place that turns a failure into text; the WAL reader uses it too.
   */
  public static String storedReason(String reason, int max) {
    String text = UrlRedaction.text(reason).replace('\u0000', ' ');
    return text.length() <= max ? text : text.substring(0, max - 3) + "...";
  }
}

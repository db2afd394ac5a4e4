package dev.pgoutbox.relay;

import static java.util.Objects.requireNonNull;

import java.time.Duration;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * What became of one event handed to a {@link Publisher}: published, failed for now (the relay
 * retries it with backoff), or failed for good (the relay dead-letters it at once).
 */
public sealed interface PublishResult
    permits PublishResult.Published, PublishResult.Retryable, PublishResult.Permanent {

  /** The broker acknowledged the event. */
  static PublishResult published() {
    return Published.INSTANCE;
  }

  /**
   * The broker acknowledged the event and said where it put it: {@code traceAttributes} are added
   * to the event's publish span (OpenTelemetry attribute names, e.g. {@code
   * messaging.destination.partition.id}; values {@code String}, {@code Long} or {@code Boolean}).
   *
   * @throws IllegalArgumentException for a value of another type
   */
  static PublishResult published(Map<String, ?> traceAttributes) {
    return traceAttributes.isEmpty()
        ? Published.INSTANCE
        : new Published(TraceAttributes.copy(traceAttributes, "traceAttributes"));
  }

  /** A failure that may pass: broker unreachable, timeout, not enough replicas. */
  static PublishResult retryable(String reason) {
    return new Retryable(reason, null);
  }

  /**
   * A failure that may pass, with the broker's own hint of when to try again (e.g. HTTP {@code
   * Retry-After}); the relay waits at least that long.
   */
  static PublishResult retryable(String reason, @Nullable Duration retryAfter) {
    return new Retryable(reason, retryAfter);
  }

  /** A failure that will not pass on retry: too large, unroutable, not authorized. */
  static PublishResult permanent(String reason) {
    return new Permanent(reason);
  }

  /**
   * The broker acknowledged the event.
   *
   * @param traceAttributes what the broker said about where it put the event, for its publish span
   *     (see {@link PublishResult#published(Map)}); empty when it said nothing
   */
  record Published(Map<String, Object> traceAttributes) implements PublishResult {

    /** Published, with nothing more to say. */
    public static final Published INSTANCE = new Published(Map.of());

    /** Copies the attributes and checks their types. */
    public Published {
      traceAttributes = TraceAttributes.copy(traceAttributes, "traceAttributes");
    }

    /**
     * Every published result equals every other ({@code result.equals(PublishResult.published())}
     * holds whatever the broker said): the attributes are for traces, not part of the answer.
     */
    @Override
    public boolean equals(@Nullable Object other) {
      return other instanceof Published;
    }

    @Override
    public int hashCode() {
      return Published.class.hashCode();
    }
  }

  /**
   * A failure worth retrying.
   *
   * @param reason stored in {@code last_error}
   * @param retryAfter the broker's hint, or null to follow the relay's backoff alone
   */
  record Retryable(String reason, @Nullable Duration retryAfter) implements PublishResult {
    /** Checks the reason. */
    public Retryable {
      requireNonNull(reason, "reason");
    }
  }

  /**
   * A failure retrying will not cure; the event is dead-lettered.
   *
   * @param reason stored in {@code last_error}
   */
  record Permanent(String reason) implements PublishResult {
    /** Checks the reason. */
    public Permanent {
      requireNonNull(reason, "reason");
    }
  }
}

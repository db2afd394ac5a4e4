package dev.pgoutbox.core.internal;

import java.util.Locale;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The rule for stored header names, shared by the writer (which refuses a bad name at {@code
 * append}) and the publishers (which leave out a stored header named like one of their own, from
 * rows written before the rule or by hand). A name every broker carries as it is: an RFC 9110 token
 * (letters, digits and {@code !#$%&'+-.^_`|~}; not {@code *}, which marks an encoded value) of at
 * most {@value #MAX_LENGTH} characters, and not a name the publishers' envelopes use.
 */
public final class HeaderNames {

  /** Longest header name. */
  public static final int MAX_LENGTH = 100;

  /**
   * Names the publishers write themselves (compared without regard to case): the event id, type and
   * aggregate headers, the CloudEvents content type, the webhook's id, signature and idempotency
   * headers, and the HTTP headers a client sets itself.
   */
  static final Set<String> RESERVED =
      Set.of(
          "event_id",
          "event_type",
          "aggregate_type",
          "aggregate_id",
          "nats-msg-id",
          "content-type",
          "content-length",
          "idempotency-key",
          "x-pgoutbox-signature",
          "webhook-id",
          "webhook-timestamp",
          "webhook-signature",
          "connection",
          "expect",
          "host",
          "keep-alive",
          "proxy-connection",
          "te",
          "trailer",
          "transfer-encoding",
          "upgrade");

  /**
   * Prefixes of the CloudEvents attribute headers (Kafka {@code ce_}, HTTP and NATS {@code ce-})
   * and of the webhook's own headers ({@code X-Pgoutbox-Event-Type}...).
   */
  private static final String[] RESERVED_PREFIXES = {"ce_", "ce-", "x-pgoutbox-"};

  private HeaderNames() {}

  /** Whether a publisher's envelope uses {@code name} (or {@code name} is one of its prefixes). */
  public static boolean reserved(String name) {
    String lower = name.toLowerCase(Locale.ROOT);
    if (RESERVED.contains(lower)) {
      return true;
    }
    for (String prefix : RESERVED_PREFIXES) {
      if (lower.startsWith(prefix)) {
        return true;
      }
    }
    return false;
  }

  /** Why {@code name} cannot be a stored header's name, or null if it can. */
  public static @Nullable String problem(String field, String name) {
    if (name.isEmpty()) {
      return field + " must not be empty";
    }
    if (name.length() > MAX_LENGTH) {
      return field + " must be at most " + MAX_LENGTH + " characters, was " + name.length();
    }
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (!tchar(c)) {
        return field
            + " must be a token (letters, digits and !#$%&'+-.^_`|~) so that every broker can"
            + " carry it, found "
            + String.format(Locale.ROOT, "U+%04X", (int) c)
            + " at index "
            + i;
      }
    }
    if (reserved(name)) {
      return field
          + " is a name the publishers write themselves (event_type, aggregate_type, aggregate_id,"
          + " event_id, Nats-Msg-Id, content-type, ce_*/ce-*, X-Pgoutbox-*, the webhook's and HTTP's"
          + " own):"
          + " choose another name";
    }
    return null;
  }

  private static boolean tchar(char c) {
    return (c >= 'a' && c <= 'z')
        || (c >= 'A' && c <= 'Z')
        || (c >= '0' && c <= '9')
        || "!#$%&'+-.^_`|~".indexOf(c) >= 0;
  }
}

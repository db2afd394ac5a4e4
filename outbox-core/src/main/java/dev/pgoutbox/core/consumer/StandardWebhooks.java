package dev.pgoutbox.core.consumer;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.core.OutboxException;
import java.nio.charset.StandardCharsets;
import java.security.InvalidKeyException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.jspecify.annotations.Nullable;

/**
 * Standard Webhooks signatures (standardwebhooks.com): what {@code
 * dev.pgoutbox.relay.webhook.WebhookPublisher} built with {@code standardWebhooksSecret(...)} puts
 * on every request, and the receiver's check, which needs only this module.
 *
 * <p>Headers: {@value #ID_HEADER} (the event id, the same on every retry), {@value
 * #TIMESTAMP_HEADER} (seconds since the epoch when the request was signed, new on every attempt)
 * and {@value #SIGNATURE_HEADER}: {@code v1,<base64 of HMAC-SHA256(key, id + "." + timestamp + "."
 * + body)>}, several space-separated while keys rotate. The key is the base64 after the {@code
 * whsec_} prefix of the secret.
 *
 * <pre>{@code
 * StandardWebhooks.Verifier verifier = StandardWebhooks.verifier(List.of(currentSecret, previousSecret));
 * byte[] body = exchange.getRequestBody().readAllBytes();
 * try {
 *   verifier.verify(exchange.getRequestHeaders(), body);
 * } catch (WebhookVerificationException e) {
 *   exchange.sendResponseHeaders(401, -1); // forged, tampered or replayed
 *   return;
 * }
 * }</pre>
 *
 * <p>Thread-safe: every call builds its own {@link Mac}.
 */
public final class StandardWebhooks {

  /** The header with the message id (the event id): {@value}. */
  public static final String ID_HEADER = "webhook-id";

  /** The header with the signing time in seconds since the epoch: {@value}. */
  public static final String TIMESTAMP_HEADER = "webhook-timestamp";

  /** The header with the signatures: {@value}. */
  public static final String SIGNATURE_HEADER = "webhook-signature";

  /** The prefix of a secret as the standard writes it: {@value}. */
  public static final String SECRET_PREFIX = "whsec_";

  /** How far a timestamp may be from the receiver's clock, by default: 5 minutes. */
  public static final Duration DEFAULT_TOLERANCE = Duration.ofMinutes(5);

  /** Shortest key, in bytes, once decoded: {@value} (the standard asks for 24 to 64). */
  public static final int MIN_KEY_BYTES = 24;

  /** Longest key, in bytes, once decoded: {@value}. */
  public static final int MAX_KEY_BYTES = 64;

  private static final String ALGORITHM = "HmacSHA256";
  private static final String VERSION = "v1,";

  private StandardWebhooks() {}

  /**
   * The {@value #SIGNATURE_HEADER} value for one request: {@code v1,<base64>}.
   *
   * @param secret {@code whsec_<base64 key>} (the prefix may be left out)
   * @param id the {@value #ID_HEADER} value
   * @param timestampSeconds the {@value #TIMESTAMP_HEADER} value
   * @param body the exact request body
   * @throws IllegalArgumentException if the secret is not base64 of 24 to 64 bytes
   */
  public static String sign(String secret, String id, long timestampSeconds, byte[] body) {
    return sign(key(secret, "secret"), id, timestampSeconds, body);
  }

  /**
   * A signer with {@code secret}'s key, decoded once: what a sender keeps.
   *
   * @throws IllegalArgumentException if the secret is not base64 of 24 to 64 bytes
   */
  public static Signer signer(String secret) {
    return new Signer(key(secret, "secret"));
  }

  /**
   * A verifier that accepts a signature made with any of {@code secrets} (several while a key
   * rotates), with the {@linkplain #DEFAULT_TOLERANCE default tolerance} and the system clock.
   *
   * @throws IllegalArgumentException if a secret is not base64 of 24 to 64 bytes
   * @throws IllegalStateException if {@code secrets} is empty
   */
  public static Verifier verifier(List<String> secrets) {
    return builder().secrets(secrets).build();
  }

  /** A builder of a verifier with other settings. */
  public static Builder builder() {
    return new Builder();
  }

  static String sign(byte[] key, String id, long timestampSeconds, byte[] body) {
    requireNonNull(id, "id");
    requireNonNull(body, "body");
    try {
      Mac mac = Mac.getInstance(ALGORITHM);
      mac.init(new SecretKeySpec(key, ALGORITHM));
      mac.update((id + "." + timestampSeconds + ".").getBytes(StandardCharsets.UTF_8));
      return VERSION + Base64.getEncoder().encodeToString(mac.doFinal(body));
    } catch (NoSuchAlgorithmException | InvalidKeyException e) {
      // Every JDK ships HmacSHA256, and any non-empty key is valid for it.
      throw new IllegalStateException("HmacSHA256 is unavailable in this JDK", e);
    }
  }

  /** The key of {@code secret}, checked. */
  static byte[] key(String secret, String field) {
    requireNonNull(secret, field);
    String encoded =
        secret.startsWith(SECRET_PREFIX) ? secret.substring(SECRET_PREFIX.length()) : secret;
    byte[] key;
    try {
      key = Base64.getDecoder().decode(encoded);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          field + " must be " + SECRET_PREFIX + " followed by base64, which it is not", e);
    }
    if (key.length < MIN_KEY_BYTES || key.length > MAX_KEY_BYTES) {
      throw new IllegalArgumentException(
          field
              + " must decode to between "
              + MIN_KEY_BYTES
              + " and "
              + MAX_KEY_BYTES
              + " bytes, was "
              + key.length);
    }
    return key;
  }

  /** Signs requests with one key. Immutable and thread-safe. */
  public static final class Signer {
    private final byte[] key;

    private Signer(byte[] key) {
      this.key = key;
    }

    /** The {@value #SIGNATURE_HEADER} value for a request: {@code v1,<base64>}. */
    public String sign(String id, long timestampSeconds, byte[] body) {
      return StandardWebhooks.sign(key, id, timestampSeconds, body);
    }
  }

  /**
   * Checks Standard Webhooks requests: a signature by one of its keys over the id, the timestamp
   * and the body, and a timestamp within the tolerance of its clock (a replay later than that is
   * refused). Immutable and thread-safe.
   */
  public static final class Verifier {
    private final List<byte[]> keys;
    private final Duration tolerance;
    private final Clock clock;

    private Verifier(Builder b) {
      this.keys = List.copyOf(b.keys);
      this.tolerance = b.tolerance;
      this.clock = b.clock;
    }

    /**
     * Checks a request given its headers (looked up without regard to case) and exact body; a
     * {@value WebhookEventIds#HEADER} header, when present, must equal the signed {@value
     * #ID_HEADER}, so that {@link WebhookEventIds#eventId} reads a signed id after this check.
     * pgoutbox's other headers ({@code X-Pgoutbox-Event-Type} and the aggregate's) are not signed:
     * a receiver that must trust the type reads it from the body (CloudEvents structured mode puts
     * it there).
     *
     * @throws WebhookVerificationException naming what is wrong: a header missing, a timestamp that
     *     is not a number or is outside the tolerance, no matching signature, a dedup key that is
     *     not the signed id
     */
    public void verify(Map<String, ? extends List<String>> headers, byte[] body) {
      requireNonNull(headers, "headers");
      String id = HttpHeaderLookup.first(headers, ID_HEADER);
      verify(
          id,
          HttpHeaderLookup.first(headers, TIMESTAMP_HEADER),
          HttpHeaderLookup.first(headers, SIGNATURE_HEADER),
          body);
      // The dedup key pgoutbox also sends is not signed: it must be the signed id, or a captured
      // request replayed under a new key would pass an inbox that reads it.
      String key = HttpHeaderLookup.first(headers, WebhookEventIds.HEADER);
      if (key != null && !key.trim().equals(id)) {
        throw new WebhookVerificationException(
            WebhookEventIds.HEADER
                + " '"
                + key
                + "' is not the signed "
                + ID_HEADER
                + " '"
                + id
                + "' (changed after signing)");
      }
    }

    /**
     * Checks a request given the values of its three headers and its exact body.
     *
     * @throws WebhookVerificationException naming what is wrong
     */
    public void verify(
        @Nullable String id, @Nullable String timestamp, @Nullable String signature, byte[] body) {
      requireNonNull(body, "body");
      if (id == null || id.isEmpty()) {
        throw new WebhookVerificationException("missing " + ID_HEADER + " header");
      }
      if (timestamp == null || timestamp.isEmpty()) {
        throw new WebhookVerificationException("missing " + TIMESTAMP_HEADER + " header");
      }
      if (signature == null || signature.isEmpty()) {
        throw new WebhookVerificationException("missing " + SIGNATURE_HEADER + " header");
      }
      long seconds;
      try {
        seconds = Long.parseLong(timestamp.trim());
      } catch (NumberFormatException e) {
        throw new WebhookVerificationException(
            TIMESTAMP_HEADER + " must be seconds since the epoch, was '" + timestamp + "'");
      }
      long now = clock.instant().getEpochSecond();
      if (Math.abs(now - seconds) > tolerance.toSeconds()) {
        throw new WebhookVerificationException(
            TIMESTAMP_HEADER
                + " "
                + seconds
                + " is "
                + Math.abs(now - seconds)
                + " s from now, more than the tolerance of "
                + tolerance.toSeconds()
                + " s (a replay, or a clock off)");
      }
      List<byte[]> offered = new ArrayList<>();
      for (String part : signature.trim().split(" +")) {
        if (part.startsWith(VERSION)) {
          offered.add(part.substring(VERSION.length()).getBytes(StandardCharsets.US_ASCII));
        }
      }
      for (byte[] key : keys) {
        String expected = sign(key, id, seconds, body).substring(VERSION.length());
        byte[] expectedBytes = expected.getBytes(StandardCharsets.US_ASCII);
        for (byte[] candidate : offered) {
          if (MessageDigest.isEqual(expectedBytes, candidate)) {
            return;
          }
        }
      }
      throw new WebhookVerificationException(
          "no " + VERSION.substring(0, 2) + " signature in " + SIGNATURE_HEADER + " matches");
    }

    /** Whether {@link #verify(Map, byte[])} passes. */
    public boolean isValid(Map<String, ? extends List<String>> headers, byte[] body) {
      try {
        verify(headers, body);
        return true;
      } catch (WebhookVerificationException e) {
        return false;
      }
    }
  }

  /** Settings of a {@link Verifier}. Not thread-safe. */
  public static final class Builder {
    private final List<byte[]> keys = new ArrayList<>();
    private Duration tolerance = DEFAULT_TOLERANCE;
    private Clock clock = Clock.systemUTC();

    private Builder() {}

    /**
     * Adds a secret ({@code whsec_<base64>}) whose signatures are accepted.
     *
     * @throws IllegalArgumentException if it is not base64 of 24 to 64 bytes
     */
    public Builder secret(String secret) {
      keys.add(key(secret, "secret"));
      return this;
    }

    /** Adds every one of {@code secrets}, as {@link #secret(String)}. */
    public Builder secrets(List<String> secrets) {
      requireNonNull(secrets, "secrets").forEach(this::secret);
      return this;
    }

    /**
     * How far {@value #TIMESTAMP_HEADER} may be from the clock, either way. Between 1 second and 1
     * hour, default {@link #DEFAULT_TOLERANCE}.
     */
    public Builder tolerance(Duration tolerance) {
      requireNonNull(tolerance, "tolerance");
      if (tolerance.compareTo(Duration.ofSeconds(1)) < 0
          || tolerance.compareTo(Duration.ofHours(1)) > 0) {
        throw new IllegalArgumentException(
            "tolerance must be between 1s and 1 hour, was " + tolerance);
      }
      this.tolerance = tolerance;
      return this;
    }

    /** The clock timestamps are compared with. Default: the system clock. */
    public Builder clock(Clock clock) {
      this.clock = requireNonNull(clock, "clock");
      return this;
    }

    /**
     * The verifier.
     *
     * @throws IllegalStateException if no secret was given
     */
    public Verifier build() {
      if (keys.isEmpty()) {
        throw new IllegalStateException("a verifier needs at least one secret: call secret(...)");
      }
      return new Verifier(this);
    }
  }

  /** A request that fails verification; the message says why. */
  public static final class WebhookVerificationException extends OutboxException {
    private static final long serialVersionUID = 1L;

    WebhookVerificationException(String message) {
      super("webhook verification failed: " + message);
    }
  }
}

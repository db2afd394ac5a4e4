package dev.pgoutbox.core.consumer;

import static java.util.Objects.requireNonNull;

import java.nio.charset.StandardCharsets;
import java.security.InvalidKeyException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Locale;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.jspecify.annotations.Nullable;

/**
 * The HMAC-SHA256 signature a {@code dev.pgoutbox.relay.webhook.WebhookPublisher} built with a
 * signing secret puts on every request, and its check on the receiving side. The relay signs with
 * {@link #sign}; a receiver checks with {@link #verify} and needs only this module.
 *
 * <p>Header {@value #HEADER}, value {@code sha256=<lowercase hex of HMAC-SHA256(secret, body)>},
 * computed over the exact bytes of the request body (the payload JSON as stored, UTF-8). A receiver
 * verifies it before it parses the body:
 *
 * <pre>{@code
 * byte[] body = exchange.getRequestBody().readAllBytes();
 * if (!WebhookSignature.verify(secret, body, exchange.getRequestHeaders().getFirst(WebhookSignature.HEADER))) {
 *   exchange.sendResponseHeaders(401, -1); // not from us
 *   return;
 * }
 * }</pre>
 *
 * <p>The signature proves the body came from a holder of the secret; it carries no timestamp, so a
 * receiver that fears replays dedups on {@code Idempotency-Key} (see {@link WebhookEventIds}),
 * which it has to do anyway because delivery is at least once. Thread-safe: every call builds its
 * own {@link Mac}.
 */
public final class WebhookSignature {

  /** The header that carries the signature: {@value}. */
  public static final String HEADER = "X-Pgoutbox-Signature";

  /** The prefix of the header's value: {@value}, followed by 64 lowercase hex digits. */
  public static final String PREFIX = "sha256=";

  private static final String ALGORITHM = "HmacSHA256";

  private WebhookSignature() {}

  /**
   * The header value for {@code body} signed with {@code secret}: {@code sha256=<hex>}.
   *
   * @throws IllegalArgumentException if the secret is empty
   */
  public static String sign(byte[] secret, byte[] body) {
    requireNonNull(secret, "secret");
    requireNonNull(body, "body");
    if (secret.length == 0) {
      throw new IllegalArgumentException("secret must not be empty");
    }
    try {
      Mac mac = Mac.getInstance(ALGORITHM);
      mac.init(new SecretKeySpec(secret, ALGORITHM));
      return PREFIX + HexFormat.of().formatHex(mac.doFinal(body));
    } catch (NoSuchAlgorithmException | InvalidKeyException e) {
      // Every JDK ships HmacSHA256, and any non-empty key is valid for it.
      throw new IllegalStateException("HmacSHA256 is unavailable in this JDK", e);
    }
  }

  /**
   * Whether {@code headerValue} is the signature of {@code body} under {@code secret}, compared in
   * constant time. A missing header is not valid.
   */
  public static boolean verify(byte[] secret, byte[] body, @Nullable String headerValue) {
    if (headerValue == null) {
      return false;
    }
    byte[] expected = sign(secret, body).getBytes(StandardCharsets.US_ASCII);
    byte[] actual = headerValue.trim().toLowerCase(Locale.ROOT).getBytes(StandardCharsets.US_ASCII);
    return MessageDigest.isEqual(expected, actual);
  }
}

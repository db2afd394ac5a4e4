package dev.pgoutbox.core.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Standard Webhooks signing and verification, against the standard's published test vector. */
class StandardWebhooksTest {

  // The test vector of the Standard Webhooks reference libraries ("sign function works").
  static final String SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  static final String ID = "msg_p5jXN8AQM9LWM0D4loKWxJek";
  static final long TIMESTAMP = 1614265330;
  static final byte[] BODY = "{\"test\": 2432232314}".getBytes(StandardCharsets.UTF_8);
  static final String SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

  static final Clock AT_SIGNING = Clock.fixed(Instant.ofEpochSecond(TIMESTAMP), ZoneOffset.UTC);

  static final String OTHER_SECRET =
      "whsec_" + Base64.getEncoder().encodeToString("another key of 32 bytes, rotated".getBytes());

  @Test
  void signsTheTestVector() {
    assertThat(StandardWebhooks.sign(SECRET, ID, TIMESTAMP, BODY)).isEqualTo(SIGNATURE);
    assertThat(StandardWebhooks.signer(SECRET).sign(ID, TIMESTAMP, BODY)).isEqualTo(SIGNATURE);
    // The whsec_ prefix is optional.
    assertThat(StandardWebhooks.sign(SECRET.substring(6), ID, TIMESTAMP, BODY))
        .isEqualTo(SIGNATURE);
  }

  @Test
  void verifiesTheTestVector() {
    verifier(SECRET).verify(headers(SIGNATURE), BODY);
    assertThat(verifier(SECRET).isValid(headers(SIGNATURE), BODY)).isTrue();
  }

  @Test
  void refusesATamperedBodyIdOrTimestamp() {
    byte[] tampered = "{\"test\": 2432232315}".getBytes(StandardCharsets.UTF_8);
    assertThatThrownBy(() -> verifier(SECRET).verify(headers(SIGNATURE), tampered))
        .isInstanceOf(StandardWebhooks.WebhookVerificationException.class)
        .hasMessageContaining("no v1 signature");
    assertThatThrownBy(
            () -> verifier(SECRET).verify("msg_other", Long.toString(TIMESTAMP), SIGNATURE, BODY))
        .hasMessageContaining("no v1 signature");
    assertThatThrownBy(
            () -> verifier(SECRET).verify(ID, Long.toString(TIMESTAMP + 1), SIGNATURE, BODY))
        .hasMessageContaining("no v1 signature");
  }

  @Test
  void refusesAStaleOrFutureTimestampAsAReplay() {
    StandardWebhooks.Verifier later =
        StandardWebhooks.builder()
            .secret(SECRET)
            .clock(Clock.offset(AT_SIGNING, Duration.ofMinutes(5).plusSeconds(1)))
            .build();
    assertThatThrownBy(() -> later.verify(headers(SIGNATURE), BODY))
        .isInstanceOf(StandardWebhooks.WebhookVerificationException.class)
        .hasMessageContaining("more than the tolerance of 300 s");
    StandardWebhooks.Verifier earlier =
        StandardWebhooks.builder()
            .secret(SECRET)
            .clock(Clock.offset(AT_SIGNING, Duration.ofMinutes(-6)))
            .build();
    assertThatThrownBy(() -> earlier.verify(headers(SIGNATURE), BODY))
        .hasMessageContaining("tolerance");
    StandardWebhooks.Verifier withinTolerance =
        StandardWebhooks.builder()
            .secret(SECRET)
            .clock(Clock.offset(AT_SIGNING, Duration.ofMinutes(4)))
            .build();
    withinTolerance.verify(headers(SIGNATURE), BODY);
  }

  @Test
  void acceptsAnyOfSeveralSecretsAndSignaturesWhileKeysRotate() {
    String other = StandardWebhooks.sign(OTHER_SECRET, ID, TIMESTAMP, BODY);
    StandardWebhooks.Verifier both =
        StandardWebhooks.builder().secrets(List.of(OTHER_SECRET, SECRET)).clock(AT_SIGNING).build();
    both.verify(headers(SIGNATURE), BODY);
    both.verify(headers(other), BODY);
    // A sender signing with old and new keys: several space-separated signatures.
    verifier(SECRET).verify(headers("v1,bm90IGEgc2lnbmF0dXJl v2,xyz " + SIGNATURE), BODY);
    assertThat(verifier(SECRET).isValid(headers(other), BODY)).isFalse();
  }

  @Test
  void refusesMissingOrMalformedHeaders() {
    StandardWebhooks.Verifier v = verifier(SECRET);
    assertThatThrownBy(() -> v.verify(Map.of(), BODY)).hasMessageContaining("missing webhook-id");
    assertThatThrownBy(() -> v.verify(ID, null, SIGNATURE, BODY))
        .hasMessageContaining("missing webhook-timestamp");
    assertThatThrownBy(() -> v.verify(ID, Long.toString(TIMESTAMP), null, BODY))
        .hasMessageContaining("missing webhook-signature");
    assertThatThrownBy(() -> v.verify(ID, "hello", SIGNATURE, BODY))
        .hasMessageContaining("webhook-timestamp must be seconds");
    assertThatThrownBy(() -> v.verify(ID, Long.toString(TIMESTAMP), "v1,", BODY))
        .hasMessageContaining("no v1 signature");
    // Header names are looked up without regard to case.
    v.verify(
        Map.of(
            "Webhook-Id", List.of(ID),
            "Webhook-Timestamp", List.of(Long.toString(TIMESTAMP)),
            "Webhook-Signature", List.of(SIGNATURE)),
        BODY);
  }

  @Test
  void refusesSecretsThatAreNotBase64OfTheRightLength() {
    assertThatThrownBy(() -> StandardWebhooks.signer("whsec_not base64!"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("secret must be whsec_ followed by base64");
    assertThatThrownBy(() -> StandardWebhooks.signer("whsec_c2hvcnQ="))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("secret must decode to between 24 and 64 bytes, was 5");
    assertThatThrownBy(() -> StandardWebhooks.builder().build())
        .isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> StandardWebhooks.builder().tolerance(Duration.ofDays(1)))
        .hasMessage("tolerance must be between 1s and 1 hour, was PT24H");
  }

  private static StandardWebhooks.Verifier verifier(String secret) {
    return StandardWebhooks.builder().secret(secret).clock(AT_SIGNING).build();
  }

  private static Map<String, List<String>> headers(String signature) {
    return Map.of(
        "webhook-id", List.of(ID),
        "webhook-timestamp", List.of(Long.toString(TIMESTAMP)),
        "webhook-signature", List.of(signature));
  }
}

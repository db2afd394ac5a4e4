package dev.pgoutbox.core.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class WebhookSignatureTest {

  @Test
  void signsWithHmacSha256AsRfc4231TestCase2() {
    assertThat(
            WebhookSignature.sign(
                "Jefe".getBytes(StandardCharsets.US_ASCII),
                "what do ya want for nothing?".getBytes(StandardCharsets.US_ASCII)))
        .isEqualTo("sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  }

  @Test
  void verifiesOnlyTheExactBodyUnderTheSameSecret() {
    byte[] secret = "k".getBytes(StandardCharsets.UTF_8);
    byte[] body = "{\"a\":1}".getBytes(StandardCharsets.UTF_8);
    String signature = WebhookSignature.sign(secret, body);
    assertThat(WebhookSignature.verify(secret, body, signature)).isTrue();
    assertThat(
            WebhookSignature.verify(
                secret, "{\"a\":2}".getBytes(StandardCharsets.UTF_8), signature))
        .isFalse();
    assertThat(WebhookSignature.verify("other".getBytes(StandardCharsets.UTF_8), body, signature))
        .isFalse();
    assertThat(WebhookSignature.verify(secret, body, null)).isFalse();
  }
}

package dev.pgoutbox.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** {@link UrlRedaction} on URLs built to slip through: every secret masked, the rest kept. */
class UrlRedactionTest {

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "https://hooks.example.com/events|https://hooks.example.com/events",
        "https://h.example.com:8443/a/b?token=S3CRET|https://h.example.com:8443/a/b?token=***",
        "https://h/p?access_token=S3CRET&sig=S3CRET2|https://h/p?access_token=***&sig=***",
        "https://h/p?S3CRET|https://h/p?***",
        "https://h/p?a=1;sig=S3CRET|https://h/p?a=***&sig=***",
        "https://h/p?=S3CRET&&x|https://h/p?=***&&***",
        "https://user:S3CRET@h/p|https://***@h/p",
        "https://S3CRET@h/p|https://***@h/p",
        // a password with an unescaped '@' or '/': everything up to the last '@' is user info
        "https://user:S3@CRET@h/p|https://***@h/p",
        "https://user:S3/CRET@h/p?x=S3CRET|https://***@h/p?x=***",
        "HTTPS://USER:S3CRET@H/P?TOKEN=S3CRET|HTTPS://***@H/P?TOKEN=***",
        "http://[::1]:8080/p?token=S3CRET|http://[::1]:8080/p?token=***",
        "https://h/p#access_token=S3CRET|https://h/p#***",
        "https://h/p?x=1#S3CRET?y=S3CRET|https://h/p?x=***#***",
        "https://h/p#S3CRET?token=S3CRET|https://h/p#***",
        "https://h/p?next=https://u:S3CRET@evil/?token=S3CRET|https://h/p?next=***",
        "https://h/p?email=a@b.example|https://h/p?email=***",
      })
  void masksUserInfoQueryValuesAndFragment(String url, String redacted) {
    assertThat(UrlRedaction.url(URI.create(url))).isEqualTo(redacted);
    assertThat(UrlRedaction.text(url)).isEqualTo(redacted);
  }

  @Test
  void findsEveryUrlInAMessageAndLeavesTheWordsAroundThem() {
    String message =
        "webhook https://u:S3CRET@h/p?token=S3CRET: I/O error (redirect to"
            + " \"http://h2/x?sig=S3CRET\"), then <ftp://a:S3CRET@b/c>, see https://h/doc."
            + "\nnext line amqp://guest:S3CRET@rabbit:5672/vhost?heartbeat=S3CRET";
    assertThat(UrlRedaction.text(message))
        .isEqualTo(
            "webhook https://***@h/p?token=***: I/O error (redirect to"
                + " \"http://h2/x?sig=***\"), then <ftp://***@b/c>, see https://h/doc."
                + "\nnext line amqp://***@rabbit:5672/vhost?heartbeat=***")
        .doesNotContain("S3CRET");
  }

  @Test
  void textWithoutAUrlIsUnchanged() {
    String plain = "HTTP 500: user:pass@ is not a URL here, nor is ?token=x alone";
    assertThat(UrlRedaction.text(plain)).isSameAs(plain);
    assertThat(UrlRedaction.text("")).isEmpty();
  }

  @Test
  void aSecretEndingInPunctuationLosesOnlyThatPunctuation() {
    assertThat(UrlRedaction.text("see https://h/p?token=S3CRET)."))
        .isEqualTo("see https://h/p?token=***).");
  }

  @Test
  void theStoredReasonIsRedactedBeforeItIsCut() {
    String reason = "x".repeat(60) + " https://h/p?token=" + "S".repeat(100);
    String stored = FailureRules.storedReason(reason, 80);
    assertThat(stored).hasSizeLessThanOrEqualTo(80).doesNotContain("S");
    assertThat(FailureRules.storedReason("https://u:pw@h/\u0000", 100))
        .isEqualTo("https://***@h/ ");
  }
}

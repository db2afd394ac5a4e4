package dev.pgoutbox.relay.webhook;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URI;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import org.junit.jupiter.api.Test;

class WebhookPublisherTest {

  @Test
  void readsRetryAfterAsSecondsOrHttpDateAndIgnoresGarbage() {
    Instant now = Instant.parse("2026-01-01T10:00:00Z");
    try (WebhookPublisher p =
        WebhookPublisher.builder(URI.create("http://localhost/x"))
            .clock(Clock.fixed(now, ZoneOffset.UTC))
            .build()) {
      assertThat(p.retryAfter("120")).isEqualTo(Duration.ofSeconds(120));
      assertThat(p.retryAfter("Thu, 01 Jan 2026 10:00:30 GMT")).isEqualTo(Duration.ofSeconds(30));
      assertThat(p.retryAfter("Thu, 01 Jan 2026 09:00:00 GMT")).isEqualTo(Duration.ZERO);
      assertThat(p.retryAfter("soon")).isNull();
      assertThat(p.retryAfter(null)).isNull();
    }
  }

  @Test
  void boundsRetryAfterAtMaxRetryAfterWhateverTheServerSays() {
    Instant now = Instant.parse("2026-01-01T10:00:00Z");
    try (WebhookPublisher p =
        WebhookPublisher.builder(URI.create("http://localhost/x"))
            .clock(Clock.fixed(now, ZoneOffset.UTC))
            .build()) {
      assertThat(WebhookPublisher.MAX_RETRY_AFTER).isEqualTo(Duration.ofHours(1));
      assertThat(p.retryAfter("3599")).isEqualTo(Duration.ofSeconds(3599));
      assertThat(p.retryAfter("3601")).isEqualTo(WebhookPublisher.MAX_RETRY_AFTER);
      assertThat(p.retryAfter("9223372036854775807")).isEqualTo(WebhookPublisher.MAX_RETRY_AFTER);
      assertThat(p.retryAfter("99999999999999999999999999999"))
          .isEqualTo(WebhookPublisher.MAX_RETRY_AFTER);
      assertThat(p.retryAfter("Fri, 31 Dec 9999 23:59:59 GMT"))
          .isEqualTo(WebhookPublisher.MAX_RETRY_AFTER);
      assertThat(p.retryAfter("Thu, 01 Jan 2026 10:30:00 GMT")).isEqualTo(Duration.ofMinutes(30));
      assertThat(p.retryAfter("-5")).isNull();
      assertThat(p.retryAfter("1e9")).isNull();
      assertThat(p.retryAfter("١٢")).isNull(); // Arabic-Indic digits are not delay-seconds
      assertThat(p.retryAfter("   ")).isNull();
      assertThat(p.retryAfter("Thu, 01 Jan 2026 10:30:00 +99999")).isNull();
    }
  }

  @Test
  @SuppressWarnings("deprecation") // signingSecret
  void refusesBadSettingsNamingThemAndTheirBounds() {
    assertThatThrownBy(() -> WebhookPublisher.builder(URI.create("ftp://x/y")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("endpoint must be an absolute http or https URL, was ftp://x/y");
    var builder = WebhookPublisher.builder(URI.create("https://x/y"));
    assertThatThrownBy(() -> builder.maxConcurrency(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("maxConcurrency must be between 1 and 1024, was 0");
    assertThatThrownBy(() -> builder.requestTimeout(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("requestTimeout must be positive, was PT0S");
    assertThatThrownBy(() -> builder.signingSecret(new byte[0]))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("signingSecret must not be empty");
  }
}

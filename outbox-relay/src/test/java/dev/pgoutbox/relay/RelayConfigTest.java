package dev.pgoutbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

class RelayConfigTest {

  @Test
  void defaultsAreTheDocumentedOnes() {
    RelayConfig config = RelayConfig.ofDefaults();
    assertThat(config.batchSize()).isEqualTo(200);
    assertThat(config.maxBatchBytes()).isEqualTo(16 * 1024 * 1024);
    assertThat(config.maxAttempts()).isEqualTo(10);
    assertThat(config.pollInterval()).isEqualTo(Duration.ofSeconds(1));
    assertThat(config.publishTimeout()).isEqualTo(Duration.ofSeconds(30));
    assertThat(config.ordering()).isEqualTo(Ordering.STRICT);
    assertThat(config.deadLetterPolicy()).isEqualTo(DeadLetterPolicy.HOLD_AGGREGATE);
    assertThat(config.completion()).isEqualTo(Completion.MARK_PROCESSED);
    assertThat(config.listenForNotifications()).isTrue();
    // Exponential with jitter 0.5 around 1 s, x2, capped at 10 min.
    assertThat(config.backoff().apply(1)).isBetween(500L, 1500L);
    assertThat(config.backoff().apply(3)).isBetween(2000L, 6000L);
    assertThat(config.backoff().apply(30)).isLessThanOrEqualTo(600_000L);
  }

  @Test
  void everyOutOfRangeSettingIsRefusedWithItsNameAndBounds() {
    RelayConfig.Builder b = RelayConfig.builder();
    assertThatThrownBy(() -> b.batchSize(0))
        .hasMessage("batchSize must be between 1 and 10000, was 0");
    assertThatThrownBy(() -> b.batchSize(10_001))
        .hasMessage("batchSize must be between 1 and 10000, was 10001");
    assertThatThrownBy(() -> b.maxBatchBytes(1_023))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("maxBatchBytes must be between 1024 and 1073741824, was 1023");
    assertThatThrownBy(() -> b.maxBatchBytes(1_073_741_825))
        .hasMessage("maxBatchBytes must be between 1024 and 1073741824, was 1073741825");
    assertThat(b.maxBatchBytes(1_024).build().maxBatchBytes()).isEqualTo(1_024);
    assertThat(b.maxBatchBytes(1_073_741_824).build().maxBatchBytes()).isEqualTo(1_073_741_824);
    assertThatThrownBy(() -> b.maxAttempts(0))
        .hasMessage("maxAttempts must be between 1 and 1000, was 0");
    assertThatThrownBy(() -> b.pollInterval(Duration.ZERO))
        .hasMessage("pollInterval must be between PT0.001S and PT1H, was PT0S");
    assertThatThrownBy(() -> b.pollInterval(null)).hasMessage("pollInterval must not be null");
    assertThatThrownBy(() -> b.publishTimeout(Duration.ofHours(2)))
        .hasMessage("publishTimeout must be between PT0.001S and PT1H, was PT2H");
    assertThatThrownBy(() -> b.lastErrorMaxLength(10))
        .hasMessage("lastErrorMaxLength must be between 64 and 100000, was 10");
    assertThatThrownBy(() -> b.errorBackoffMax(Duration.ofMillis(1)))
        .hasMessage("errorBackoffMax must be between PT0.1S and PT1H, was PT0.001S");
    assertThatThrownBy(() -> b.metricsRefreshInterval(Duration.ofMillis(1)))
        .hasMessage("metricsRefreshInterval must be between PT0.1S and PT1H, was PT0.001S");
    assertThatThrownBy(
            () -> b.exponentialBackoff(Duration.ofSeconds(1), 0.5, 0.5, Duration.ofMinutes(1)))
        .hasMessage("backoff multiplier must be between 1.0 and 100.0, was 0.5");
    assertThatThrownBy(
            () -> b.exponentialBackoff(Duration.ofSeconds(1), 2.0, 1.0, Duration.ofMinutes(1)))
        .hasMessage("backoff jitter must be between 0.0 (inclusive) and 1.0 (exclusive), was 1.0");
    assertThatThrownBy(
            () -> b.exponentialBackoff(Duration.ofSeconds(10), 2.0, 0.1, Duration.ofSeconds(1)))
        .hasMessage("backoff max must be between PT10S and PT168H, was PT1S");
    assertThatThrownBy(() -> b.ordering(null)).hasMessage("ordering must not be null");
    assertThatThrownBy(() -> b.backoff(null)).hasMessage("backoff must not be null");
    assertThatThrownBy(() -> b.clock(null)).hasMessage("clock must not be null");
  }

  @Test
  void toStringNamesEverySettingThatStartLogs() {
    String text =
        RelayConfig.builder()
            .exponentialBackoff(Duration.ofSeconds(2), 3.0, 0.25, Duration.ofMinutes(5))
            .build()
            .toString();
    for (java.lang.reflect.Field field : RelayConfig.class.getDeclaredFields()) {
      if (java.lang.reflect.Modifier.isStatic(field.getModifiers())
          || field.getName().equals("backoffDescription")
          // Whether batchSize and completion were set (WalRelay's own defaults), not settings.
          || field.getName().endsWith("Set")) {
        continue;
      }
      assertThat(text).contains(field.getName() + "=");
    }
    assertThat(text)
        .contains("backoff=exponential(initial=PT2S, multiplier=3.0, jitter=0.25, max=PT5M)");
  }

  @Test
  void fromCopiesEverySetting() {
    RelayConfig original =
        RelayConfig.builder()
            .batchSize(7)
            .maxBatchBytes(5_000)
            .ordering(Ordering.UNORDERED)
            .completion(Completion.DELETE)
            .listenForNotifications(false)
            .build();
    RelayConfig copy = RelayConfig.from(original).build();
    assertThat(copy.toString()).isEqualTo(original.toString());
    assertThat(copy.listenForNotifications()).isFalse();
  }

  @Test
  void relayBuilderNamesWhatIsMissingOrWrong() {
    DataSource dataSource = new PGSimpleDataSource();
    Publisher publisher =
        batch -> CompletableFuture.completedFuture(List.of(PublishResult.published()));
    assertThatThrownBy(() -> OutboxRelay.builder().publisher(publisher).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("dataSource is required: call dataSource(...)");
    assertThatThrownBy(() -> OutboxRelay.builder().dataSource(dataSource).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("publisher is required: call publisher(...)");
    assertThatThrownBy(() -> OutboxRelay.builder().name("has space"))
        .hasMessageContaining("name must be letters, digits");
    assertThatThrownBy(() -> OutboxRelay.builder().name("x".repeat(49)))
        .hasMessage("name must be between 1 and 48 characters long, was 49");
    assertThatThrownBy(() -> OutboxRelay.builder().schema("Outbox"))
        .hasMessageContaining("schema must be a plain identifier");
    assertThat(OutboxRelay.builder().dataSource(dataSource).publisher(publisher).name("ok").build())
        .isNotNull();
  }
}

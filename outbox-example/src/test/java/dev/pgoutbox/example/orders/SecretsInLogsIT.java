package dev.pgoutbox.example.orders;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.pgoutbox.testing.TestSchema;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.LoggerFactory;

/**
 * The service started with a password in its JDBC URL and in its NATS URL logs neither, nor shows
 * them on {@code GET /health}; the start-up line shows where it connected, with {@code ***}.
 */
class SecretsInLogsIT {

  @RegisterExtension static final TestSchema db = TestSchema.empty();

  private static final String NATS_SECRET = "nats-s3cret-" + UUID.randomUUID();

  /** The machine's NATS (as in OtherBrokersIT), with a user and password added to its URL. */
  private static String natsUrlWithPassword() {
    URI nats =
        URI.create(System.getenv().getOrDefault("PGOUTBOX_TEST_NATS_URL", "nats://127.0.0.1:4222"));
    return "nats://pgoutbox:" + NATS_SECRET + "@" + nats.getHost() + ":" + nats.getPort();
  }

  @Test
  void startUpLogHealthAndSettingsShowNoPassword() {
    Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    ListAppender<ILoggingEvent> logs = new ListAppender<>();
    logs.start();
    root.addAppender(logs);
    String schema = db.schema() + "_secrets";
    String topic = "pgoutbox-it-secrets-" + UUID.randomUUID().toString().substring(0, 8);
    // The test database's real password when it has one; else (trust authentication) a made-up
    // one, which the server does not ask for but which the URL carries all the same.
    java.util.regex.Matcher given =
        java.util.regex.Pattern.compile("[?&]password=([^&]+)").matcher(db.jdbcUrl());
    String dbSecret = given.find() ? given.group(1) : "db-s3cret-" + UUID.randomUUID();
    String jdbcUrl =
        db.jdbcUrl().contains("password=") ? db.jdbcUrl() : db.jdbcUrl() + "&password=" + dbSecret;
    AppSettings settings =
        AppSettings.builder()
            .jdbcUrl(jdbcUrl)
            .schema(schema)
            .topic(topic)
            .broker(new BrokerChoice(BrokerChoice.Kind.NATS, natsUrlWithPassword()))
            .port(0)
            .deliveryTimeout(Duration.ofSeconds(5))
            .build();
    try (OrderApplication app = OrderApplication.start(settings)) {
      Http.Reply health = new Http(app.baseUri()).get("/health");

      List<String> lines =
          logs.list.stream().map(e -> e.getLoggerName() + " " + e.getFormattedMessage()).toList();
      assertThat(lines)
          .as("the start-up line")
          .anySatisfy(
              line ->
                  assertThat(line)
                      .contains("Order service listening on")
                      .contains("password=***")
                      .contains("nats://pgoutbox:***@"));
      assertThat(lines).noneSatisfy(line -> assertThat(line).contains(dbSecret));
      assertThat(lines).noneSatisfy(line -> assertThat(line).contains(NATS_SECRET));
      assertThat(health.text()).contains("nats://pgoutbox:***@").doesNotContain(NATS_SECRET);
      assertThat(settings.toString())
          .doesNotContain(dbSecret)
          .doesNotContain(NATS_SECRET)
          .contains("password=***");
    } finally {
      root.detachAppender(logs);
      db.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
      try {
        io.nats.client.Connection c = io.nats.client.Nats.connect(natsUrlWithPassword());
        try {
          c.jetStreamManagement()
              .deleteStream(topic.toUpperCase(Locale.ROOT).replaceAll("[^A-Z0-9_-]", "_"));
        } finally {
          c.close();
        }
      } catch (Exception e) {
        // Clean-up only: when the service did not start, there is no stream to delete.
      }
    }
  }
}

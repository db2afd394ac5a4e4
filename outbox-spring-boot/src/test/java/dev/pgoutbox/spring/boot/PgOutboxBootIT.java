package dev.pgoutbox.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.relay.Ordering;
import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.JdbcTemplateAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The starter in a Boot application context on the real PostgreSQL: the schema migrated by the
 * starter, events appended in Spring transactions, published by the relay through a recording
 * Publisher bean.
 */
class PgOutboxBootIT {

  @RegisterExtension static final TestSchema db = TestSchema.empty();

  private static final Duration WITHIN = Duration.ofSeconds(15);

  @BeforeAll
  static void businessTable() {
    db.execute("CREATE TABLE " + db.schema() + ".orders (id text PRIMARY KEY)");
  }

  private ApplicationContextRunner runner() {
    return new ApplicationContextRunner()
        .withConfiguration(
            AutoConfigurations.of(
                DataSourceAutoConfiguration.class,
                DataSourceTransactionManagerAutoConfiguration.class,
                TransactionAutoConfiguration.class,
                JdbcTemplateAutoConfiguration.class,
                PgOutboxAutoConfiguration.class))
        .withPropertyValues(
            "spring.datasource.url=" + db.jdbcUrl(),
            "spring.datasource.hikari.maximum-pool-size=4",
            "pgoutbox.schema=" + db.schema(),
            "pgoutbox.relay.name=boot-it");
  }

  /** The application's service: business row and event in one @Transactional method. */
  static class OrderService {
    private final JdbcTemplate jdbc;
    private final SpringOutbox outbox;

    OrderService(JdbcTemplate jdbc, SpringOutbox outbox) {
      this.jdbc = jdbc;
      this.outbox = outbox;
    }

    @Transactional
    public void place(String id, boolean fail) {
      jdbc.update("INSERT INTO " + db.schema() + ".orders (id) VALUES (?)", id);
      outbox.append(OutboxEvent.of("order", id, "order.placed", Map.of("id", id)));
      if (fail) {
        throw new IllegalStateException("payment refused for " + id);
      }
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class App {
    @Bean
    RecordingPublisher publisher() {
      return new RecordingPublisher();
    }

    @Bean
    OrderService orderService(JdbcTemplate jdbc, SpringOutbox outbox) {
      return new OrderService(jdbc, outbox);
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class Metrics {
    @Bean
    MeterRegistry meterRegistry() {
      return new SimpleMeterRegistry();
    }
  }

  private static long rows(String table, String id) {
    String column = table.equals("orders") ? "id" : "aggregate_id";
    return db.queryLong(
        "SELECT count(*) FROM "
            + db.schema()
            + "."
            + table
            + " WHERE "
            + column
            + " = '"
            + id
            + "'");
  }

  @Test
  void transactionalCommitPublishesAndRollbackDropsTheEvent() {
    runner()
        .withUserConfiguration(App.class)
        .run(
            context -> {
              assertThat(context).hasNotFailed();
              OrderService orders = context.getBean(OrderService.class);
              RecordingPublisher publisher = context.getBean(RecordingPublisher.class);

              assertThatThrownBy(() -> orders.place("o-rolled-back", true))
                  .hasMessageContaining("payment refused");
              orders.place("o-committed", false);

              Eventually.await(
                  "o-committed published", WITHIN, () -> delivered(publisher, "o-committed"));
              // Published after the rolled-back attempt, so that one had its chance: it has none.
              assertThat(delivered(publisher, "o-rolled-back")).isFalse();
              assertThat(rows("outbox_events", "o-rolled-back")).isZero();
              assertThat(rows("orders", "o-rolled-back")).isZero();
              assertThat(rows("orders", "o-committed")).isOne();
            });
  }

  @Test
  void transactionTemplateAndJdbcTemplateShareTheEventsTransaction() {
    runner()
        .withUserConfiguration(App.class)
        .run(
            context -> {
              TransactionTemplate tx = context.getBean(TransactionTemplate.class);
              JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
              SpringOutbox outbox = context.getBean(SpringOutbox.class);
              RecordingPublisher publisher = context.getBean(RecordingPublisher.class);

              tx.executeWithoutResult(
                  status -> {
                    jdbc.update("INSERT INTO " + db.schema() + ".orders (id) VALUES ('t-undone')");
                    outbox.append(OutboxEvent.of("order", "t-undone", "order.placed", Map.of()));
                    status.setRollbackOnly();
                  });
              tx.executeWithoutResult(
                  status -> {
                    jdbc.update("INSERT INTO " + db.schema() + ".orders (id) VALUES ('t-done')");
                    outbox.append(OutboxEvent.of("order", "t-done", "order.placed", Map.of()));
                  });

              Eventually.await("t-done published", WITHIN, () -> delivered(publisher, "t-done"));
              assertThat(delivered(publisher, "t-undone")).isFalse();
              assertThat(rows("outbox_events", "t-undone")).isZero();
            });
  }

  @Test
  void appendWithoutTransactionIsRefusedAndWritesNothing() {
    runner()
        .withUserConfiguration(App.class)
        .run(
            context -> {
              SpringOutbox outbox = context.getBean(SpringOutbox.class);
              assertThatThrownBy(
                      () ->
                          outbox.append(OutboxEvent.of("order", "no-tx", "order.placed", Map.of())))
                  .isInstanceOf(OutboxException.class)
                  .hasMessageContaining("append needs a Spring transaction")
                  .hasMessageContaining("@Transactional")
                  .hasMessageContaining("nothing was written");
              assertThat(rows("outbox_events", "no-tx")).isZero();
            });
  }

  @Test
  void propertiesBindToTheRelaysSettings() {
    runner()
        .withUserConfiguration(App.class)
        .withPropertyValues(
            "pgoutbox.relay.batch-size=50",
            "pgoutbox.relay.max-batch-bytes=4194304",
            "pgoutbox.writer.max-payload-bytes=2097152",
            "pgoutbox.writer.max-headers=8",
            "pgoutbox.writer.max-header-bytes=1024",
            "pgoutbox.relay.poll-interval=250ms",
            "pgoutbox.relay.max-attempts=3",
            "pgoutbox.relay.ordering=unordered",
            "pgoutbox.relay.backoff.initial=2s",
            "pgoutbox.relay.backoff.jitter=0",
            "pgoutbox.relay.backoff.max=1m",
            "pgoutbox.writer.serialize-writers-per-aggregate=false")
        .run(
            context -> {
              assertThat(context).hasNotFailed();
              OutboxRelay relay = context.getBean(OutboxRelayLifecycle.class).relay();
              assertThat(relay).isNotNull();
              assertThat(relay.name()).isEqualTo("boot-it");
              assertThat(relay.config().batchSize()).isEqualTo(50);
              assertThat(relay.config().maxBatchBytes()).isEqualTo(4 * 1024 * 1024);
              Outbox outbox = context.getBean(Outbox.class);
              assertThat(outbox.maxPayloadBytes()).isEqualTo(2_097_152);
              assertThat(outbox.maxHeaders()).isEqualTo(8);
              assertThat(outbox.maxHeaderBytes()).isEqualTo(1_024);
              assertThat(relay.config().pollInterval()).isEqualTo(Duration.ofMillis(250));
              assertThat(relay.config().maxAttempts()).isEqualTo(3);
              assertThat(relay.config().ordering()).isEqualTo(Ordering.UNORDERED);
              assertThat(relay.config().backoff().apply(1)).isEqualTo(2_000L);
              assertThat(relay.config().backoff().apply(2)).isEqualTo(4_000L);
              assertThat(relay.config().backoff().apply(10)).isEqualTo(60_000L);
              assertThat(
                      context.getBean(SpringOutbox.class).outbox().serializesWritersPerAggregate())
                  .isFalse();
            });
  }

  @Test
  void badValueFailsStartUpNamingThePropertyAndItsBound() {
    runner()
        .withUserConfiguration(App.class)
        .withPropertyValues("pgoutbox.relay.batch-size=0")
        .run(
            context -> {
              assertThat(context).hasFailed();
              Throwable failure = context.getStartupFailure();
              // Boot names the prefix and the property, the library the bound.
              assertThat(failure)
                  .hasStackTraceContaining("Failed to bind properties under 'pgoutbox.relay'")
                  .hasStackTraceContaining("Unable to set value for property batch-size");
              assertThat(failure)
                  .rootCause()
                  .hasMessage("batchSize must be between 1 and 10000, was 0");
            });
    runner()
        .withUserConfiguration(App.class)
        .withPropertyValues("pgoutbox.relay.backoff.initial=5m", "pgoutbox.relay.backoff.max=1m")
        .run(
            context -> {
              assertThat(context).hasFailed();
              assertThat(context.getStartupFailure())
                  .hasStackTraceContaining("Invalid pgoutbox.relay.backoff.*: backoff max");
            });
  }

  @Test
  void relayDisabledByPropertyLeavesAnAppendOnlyOutbox() {
    runner()
        .withPropertyValues("pgoutbox.relay.enabled=false")
        .run(
            context -> {
              assertThat(context).hasNotFailed();
              assertThat(context).doesNotHaveBean(OutboxRelayLifecycle.class);
              assertThat(context).doesNotHaveBean(Publisher.class);
              assertThat(context).hasSingleBean(SpringOutbox.class);
            });
  }

  @Test
  void enabledRelayWithoutPublisherFailsStartUpSayingWhatToDo() {
    runner()
        .run(
            context -> {
              assertThat(context).hasFailed();
              assertThat(context.getStartupFailure())
                  .hasStackTraceContaining("there is no Publisher")
                  .hasStackTraceContaining("pgoutbox.relay.enabled=false");
            });
  }

  @Test
  void healthAndMetricsReportTheRelayAndItStopsWithTheContext() {
    OutboxRelay[] relay = new OutboxRelay[1];
    runner()
        .withUserConfiguration(App.class, Metrics.class)
        .withPropertyValues("pgoutbox.relay.metrics-refresh-interval=100ms")
        .run(
            context -> {
              assertThat(context).hasNotFailed();
              relay[0] = context.getBean(OutboxRelayLifecycle.class).relay();
              context.getBean(OrderService.class).place("h-1", false);
              RecordingPublisher publisher = context.getBean(RecordingPublisher.class);
              Eventually.await("h-1 published", WITHIN, () -> delivered(publisher, "h-1"));

              Health health = context.getBean(OutboxHealthIndicator.class).health();
              assertThat(health.getStatus()).isEqualTo(Status.UP);
              assertThat(health.getDetails())
                  .containsEntry("relayRunning", true)
                  .containsKeys("pending", "oldestPendingAge", "deadLetters", "blockedAggregates");

              MeterRegistry registry = context.getBean(MeterRegistry.class);
              Eventually.await(
                  "the published counter",
                  WITHIN,
                  () -> {
                    var counter = registry.find("outbox.events.published").counter();
                    return counter != null && counter.count() >= 1;
                  });
            });
    assertThat(relay[0]).isNotNull();
    assertThat(relay[0].isRunning()).isFalse();
  }

  @Test
  void healthGoesDownPastTheDeadLetterThreshold() {
    runner()
        .withUserConfiguration(App.class)
        .withPropertyValues("pgoutbox.health.max-dead-letters=-1")
        .run(
            context -> {
              Health health = context.getBean(OutboxHealthIndicator.class).health();
              assertThat(health.getStatus()).isEqualTo(Status.DOWN);
              assertThat(health.getDetails()).containsEntry("maxDeadLetters", -1L);
            });
  }

  private static boolean delivered(RecordingPublisher publisher, String aggregateId) {
    return publisher.delivered().stream().anyMatch(m -> m.aggregateId().equals(aggregateId));
  }
}

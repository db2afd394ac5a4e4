package dev.pgoutbox.spring.boot;

import dev.pgoutbox.admin.OutboxAdmin;
import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.PublishTracing;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayListener;
import dev.pgoutbox.relay.micrometer.MicrometerRelayMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.sql.init.dependency.DependsOnDatabaseInitialization;
import org.springframework.boot.thread.Threading;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.core.env.Environment;

/**
 * Auto-configuration of pgoutbox on the application's {@link DataSource}: the schema migration, an
 * {@link Outbox} and a {@link SpringOutbox}, the relay ({@link OutboxRelayLifecycle}) with its
 * publisher ({@code pgoutbox.publisher.type}), executor, tracing and metrics, and the health
 * indicator. Properties: {@link PgOutboxProperties}; every bean backs off when the application
 * declares its own.
 */
@AutoConfiguration(
    afterName = {
      "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
      "org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration",
      "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
      "org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration",
      "org.springframework.boot.amqp.autoconfigure.RabbitAutoConfiguration",
      "org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration"
    })
@ConditionalOnBean(DataSource.class)
@EnableConfigurationProperties(PgOutboxProperties.class)
@Import(PublisherConfigurations.class)
public final class PgOutboxAutoConfiguration {

  /**
   * Name of the relay's executor bean; declare a {@code ScheduledExecutorService} so named to
   * replace it.
   */
  public static final String EXECUTOR_BEAN = "pgoutboxRelayExecutor";

  private static final Logger LOG = LoggerFactory.getLogger(PgOutboxAutoConfiguration.class);

  /** Public for Spring; use the properties. */
  public PgOutboxAutoConfiguration() {}

  /**
   * The outbox schema, migrated at start-up when {@code pgoutbox.migrate} is true (after the
   * application's own database initialization: Flyway, Liquibase, SQL scripts).
   */
  @Bean
  @ConditionalOnMissingBean
  @DependsOnDatabaseInitialization
  OutboxSchemaReady pgoutboxSchema(DataSource dataSource, PgOutboxProperties properties) {
    if (properties.isMigrate()) {
      int applied = OutboxSchema.migrate(dataSource, properties.getSchema());
      LOG.info(
          "pgoutbox - Schema {} migrated ({} migrations applied)", properties.getSchema(), applied);
    }
    return new OutboxSchemaReady(properties.getSchema());
  }

  /** The plain outbox (append with an explicit jOOQ context or connection). */
  @Bean
  @ConditionalOnMissingBean
  Outbox pgoutboxOutbox(OutboxSchemaReady schema, PgOutboxProperties properties) {
    return Outbox.builder()
        .schema(schema.schema())
        .serializeWritersPerAggregate(properties.getWriter().isSerializeWritersPerAggregate())
        .maxPayloadBytes(properties.getWriter().getMaxPayloadBytes())
        .maxHeaders(properties.getWriter().getMaxHeaders())
        .maxHeaderBytes(properties.getWriter().getMaxHeaderBytes())
        .build();
  }

  /** The outbox that joins the current Spring transaction. */
  @Bean
  @ConditionalOnMissingBean
  SpringOutbox pgoutboxSpringOutbox(Outbox outbox, DataSource dataSource) {
    return new SpringOutbox(outbox, dataSource);
  }

  /** Stats, dead letters, retry and discard. */
  @Bean
  @ConditionalOnMissingBean
  OutboxAdmin pgoutboxAdmin(OutboxSchemaReady schema, DataSource dataSource) {
    return OutboxAdmin.builder().dataSource(dataSource).schema(schema.schema()).build();
  }

  /** The relay, unless {@code pgoutbox.relay.enabled=false}. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnBooleanProperty(name = "pgoutbox.relay.enabled", matchIfMissing = true)
  static class RelayConfiguration {

    @Bean(name = EXECUTOR_BEAN, destroyMethod = "shutdownNow")
    @ConditionalOnMissingBean(name = EXECUTOR_BEAN)
    ScheduledExecutorService pgoutboxRelayExecutor(
        PgOutboxProperties properties, Environment environment) {
      boolean virtual = Threading.VIRTUAL.isActive(environment);
      String prefix = "pgoutbox-relay-" + properties.getRelay().getName() + "-";
      ThreadFactory threads;
      if (virtual) {
        threads = Thread.ofVirtual().name(prefix, 0).factory();
      } else {
        AtomicInteger count = new AtomicInteger();
        ThreadFactory base = Thread.ofPlatform().daemon(true).factory();
        threads =
            task -> {
              Thread thread = base.newThread(task);
              thread.setName(prefix + count.getAndIncrement());
              return thread;
            };
      }
      return Executors.newScheduledThreadPool(properties.getRelay().getExecutorThreads(), threads);
    }

    /**
     * The relay's tracing, from what the application traces with ({@code
     * pgoutbox.relay.tracing.*}): an ObservationRegistry with a micrometer-tracing Tracer, else an
     * OpenTelemetry bean, else the global OpenTelemetry, else none. Declare a {@link
     * PublishTracing} bean to choose yourself.
     */
    @Bean
    @ConditionalOnMissingBean
    PublishTracing pgoutboxRelayTracing(BeanFactory beans, PgOutboxProperties properties) {
      return RelayTracingSelection.select(beans, properties.getRelay().getTracing());
    }

    @Bean
    @ConditionalOnMissingBean
    OutboxRelayLifecycle pgoutboxRelay(
        OutboxSchemaReady schema,
        DataSource dataSource,
        PgOutboxProperties properties,
        ObjectProvider<Publisher> publishers,
        ObjectProvider<RelayListener> listeners,
        PublishTracing tracing,
        @Qualifier(EXECUTOR_BEAN) ScheduledExecutorService executor) {
      PgOutboxProperties.Relay relay = properties.getRelay();
      var config = relay.toRelayConfig();
      return new OutboxRelayLifecycle(
          activity -> {
            Publisher publisher = publishers.getIfAvailable();
            if (publisher == null) {
              throw new IllegalStateException(
                  PublisherConfigurations.noPublisher(properties.getPublisher().getType()));
            }
            List<RelayListener> all = new ArrayList<>(listeners.orderedStream().toList());
            all.add(activity);
            return OutboxRelay.builder()
                .name(relay.getName())
                .dataSource(dataSource)
                .schema(schema.schema())
                .publisher(publisher)
                .config(config)
                .listener(RelayListener.composite(all))
                .tracing(tracing)
                .executor(executor)
                .build();
          },
          relay.getShutdownTimeout());
    }
  }

  /** The relay's Micrometer metrics, when the application has a {@link MeterRegistry}. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(
      name = {
        "io.micrometer.core.instrument.MeterRegistry",
        "dev.pgoutbox.relay.micrometer.MicrometerRelayMetrics"
      })
  @ConditionalOnBooleanProperty(name = "pgoutbox.relay.enabled", matchIfMissing = true)
  static class MetricsConfiguration {

    @Bean
    @ConditionalOnBean(MeterRegistry.class)
    @ConditionalOnMissingBean
    MicrometerRelayMetrics pgoutboxRelayMetrics(
        MeterRegistry registry, PgOutboxProperties properties) {
      return new MicrometerRelayMetrics(registry, properties.getRelay().getName());
    }
  }

  /** The {@code pgoutbox} health indicator, when Boot's health support is present. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.boot.health.contributor.HealthIndicator")
  static class HealthConfiguration {

    @Bean(name = "pgoutboxHealthIndicator")
    @ConditionalOnMissingBean(name = "pgoutboxHealthIndicator")
    OutboxHealthIndicator pgoutboxHealthIndicator(
        OutboxAdmin admin,
        ObjectProvider<OutboxRelayLifecycle> relay,
        PgOutboxProperties properties) {
      return new OutboxHealthIndicator(admin, relay.getIfAvailable(), properties.getHealth());
    }
  }

  /**
   * Marks the outbox schema as ready (migrated, or left to the application); the outbox beans
   * depend on it so that nothing appends or relays before the migration ran.
   *
   * @param schema the outbox schema
   */
  public record OutboxSchemaReady(String schema) {}
}

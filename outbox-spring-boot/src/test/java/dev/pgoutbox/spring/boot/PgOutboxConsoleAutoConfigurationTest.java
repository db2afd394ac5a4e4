package dev.pgoutbox.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.admin.OutboxAdmin;
import dev.pgoutbox.console.OutboxConsole;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.web.servlet.ServletRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** When the starter serves the console, where, and with what it allows (no database needed). */
class PgOutboxConsoleAutoConfigurationTest {

  @Configuration(proxyBeanMethods = false)
  @EnableConfigurationProperties(PgOutboxProperties.class)
  static class Host {
    @Bean
    OutboxAdmin admin() {
      return OutboxAdmin.builder().dataSource(new PGSimpleDataSource()).build();
    }
  }

  private final WebApplicationContextRunner runner =
      new WebApplicationContextRunner()
          .withUserConfiguration(Host.class)
          .withConfiguration(AutoConfigurations.of(PgOutboxConsoleAutoConfiguration.class));

  private static java.util.Collection<String> mappings(ServletRegistrationBean<?> registration) {
    return registration.getUrlMappings();
  }

  @Test
  void theConsoleIsNotServedUnlessEnabled() {
    runner.run(
        context -> {
          assertThat(context).hasNotFailed();
          assertThat(context).doesNotHaveBean(OutboxConsole.class);
          assertThat(context).doesNotHaveBean(ServletRegistrationBean.class);
        });
  }

  @Test
  void enabledItIsServedReadOnlyAtItsDefaultPath() {
    runner
        .withPropertyValues("pgoutbox.console.enabled=true")
        .run(
            context -> {
              OutboxConsole console = context.getBean(OutboxConsole.class);
              assertThat(console.writesEnabled()).isFalse();
              assertThat(console.showsPayloads()).isFalse();
              assertThat(mappings(context.getBean(ServletRegistrationBean.class)))
                  .containsExactly("/pgoutbox", "/pgoutbox/*");
            });
  }

  @Test
  void itsPathAndWritesComeFromTheProperties() {
    runner
        .withPropertyValues(
            "pgoutbox.console.enabled=true",
            "pgoutbox.console.path=/ops/outbox",
            "pgoutbox.console.writes-enabled=true",
            "pgoutbox.console.show-payloads=true")
        .run(
            context -> {
              OutboxConsole console = context.getBean(OutboxConsole.class);
              assertThat(console.writesEnabled()).isTrue();
              assertThat(console.showsPayloads()).isTrue();
              assertThat(mappings(context.getBean(ServletRegistrationBean.class)))
                  .containsExactly("/ops/outbox", "/ops/outbox/*");
            });
  }

  @Test
  void aBadPathFailsTheStartNamingTheProperty() {
    runner
        .withPropertyValues("pgoutbox.console.enabled=true", "pgoutbox.console.path=/ops/*")
        .run(
            context -> {
              assertThat(context).hasFailed();
              assertThat(context.getStartupFailure())
                  .hasStackTraceContaining("pgoutbox.console.path must be a path like /pgoutbox");
            });
  }
}

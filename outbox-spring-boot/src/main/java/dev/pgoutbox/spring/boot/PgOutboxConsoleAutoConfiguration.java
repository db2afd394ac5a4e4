package dev.pgoutbox.spring.boot;

import dev.pgoutbox.admin.OutboxAdmin;
import dev.pgoutbox.console.OutboxConsole;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.web.servlet.ServletRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.util.ClassUtils;

/**
 * The web console ({@link OutboxConsole}) at {@code pgoutbox.console.path} (default {@value
 * PgOutboxProperties.Console#DEFAULT_PATH}) of a servlet web application, when {@code
 * pgoutbox.console.enabled} is true: read-only and without payloads unless {@code
 * pgoutbox.console.writes-enabled} and {@code pgoutbox.console.show-payloads} say otherwise; with
 * Spring Security on the classpath, a write needs {@code pgoutbox.console.write-role}.
 */
@AutoConfiguration(after = PgOutboxAutoConfiguration.class)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnClass(name = "jakarta.servlet.http.HttpServlet")
@ConditionalOnBean(OutboxAdmin.class)
@ConditionalOnBooleanProperty("pgoutbox.console.enabled")
public final class PgOutboxConsoleAutoConfiguration {

  /** The class whose presence means Spring Security guards the application. */
  static final String SPRING_SECURITY = "org.springframework.security.core.context.SecurityContext";

  private static final Logger LOG = LoggerFactory.getLogger(PgOutboxConsoleAutoConfiguration.class);

  /** Public for Spring; turn the console on with pgoutbox.console.enabled=true. */
  public PgOutboxConsoleAutoConfiguration() {}

  /** The console on the admin, with {@code pgoutbox.console.*}. */
  @Bean
  @ConditionalOnMissingBean
  OutboxConsole pgoutboxConsole(OutboxAdmin admin, PgOutboxProperties properties) {
    PgOutboxProperties.Console settings = properties.getConsole();
    return OutboxConsole.builder(admin)
        .writesEnabled(settings.isWritesEnabled())
        .showPayloads(settings.isShowPayloads())
        .build();
  }

  /** The servlet serving it at {@code pgoutbox.console.path}. */
  @Bean
  ServletRegistrationBean<ConsoleServlet> pgoutboxConsoleServlet(
      OutboxConsole console, PgOutboxProperties properties) {
    PgOutboxProperties.Console settings = properties.getConsole();
    boolean security = ClassUtils.isPresent(SPRING_SECURITY, getClass().getClassLoader());
    String role = security ? settings.getWriteRole() : null;
    if (console.writesEnabled() && role == null) {
      LOG.warn(
          "pgoutbox-console - Writes are enabled at {} and Spring Security is absent: anyone who"
              + " reaches that path may retry and discard events",
          settings.getPath());
    }
    LOG.info(
        "pgoutbox-console - Serving the console at {} ({}, payloads {})",
        settings.getPath(),
        !console.writesEnabled()
            ? "read-only"
            : role == null ? "writes enabled" : "writes need role " + role,
        console.showsPayloads() ? "shown" : "hidden");
    ServletRegistrationBean<ConsoleServlet> registration =
        new ServletRegistrationBean<>(
            new ConsoleServlet(console, role),
            ConsoleServlet.mappings(settings.getPath()).toArray(String[]::new));
    registration.setName("pgoutboxConsole");
    return registration;
  }
}

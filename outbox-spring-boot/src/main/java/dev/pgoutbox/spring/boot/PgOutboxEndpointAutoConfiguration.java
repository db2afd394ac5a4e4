package dev.pgoutbox.spring.boot;

import dev.pgoutbox.admin.OutboxAdmin;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * The {@code outbox} Actuator endpoint ({@link OutboxEndpoint}), when Actuator is present and the
 * endpoint is exposed ({@code management.endpoints.web.exposure.include=outbox}): read-only and
 * without payloads unless {@code pgoutbox.actuator.writes-enabled} and {@code
 * pgoutbox.actuator.show-payloads} say otherwise.
 */
@AutoConfiguration(after = PgOutboxAutoConfiguration.class)
@ConditionalOnClass(
    name = {
      "org.springframework.boot.actuate.endpoint.annotation.Endpoint",
      "org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint"
    })
@ConditionalOnBean(OutboxAdmin.class)
@ConditionalOnAvailableEndpoint(OutboxEndpoint.class)
public final class PgOutboxEndpointAutoConfiguration {

  /** Public for Spring; expose the endpoint with management.endpoints.web.exposure.include. */
  public PgOutboxEndpointAutoConfiguration() {}

  /**
   * The endpoint, on the admin and every relay lifecycle of the context, with {@code
   * pgoutbox.actuator.*}.
   */
  @Bean
  @ConditionalOnMissingBean
  OutboxEndpoint pgoutboxEndpoint(
      OutboxAdmin admin,
      ObjectProvider<OutboxRelayLifecycle> relays,
      PgOutboxProperties properties) {
    return new OutboxEndpoint(admin, relays.orderedStream().toList(), properties.getActuator());
  }
}

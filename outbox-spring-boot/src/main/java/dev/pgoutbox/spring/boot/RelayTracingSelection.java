package dev.pgoutbox.spring.boot;

import dev.pgoutbox.relay.PublishTracing;
import dev.pgoutbox.relay.micrometer.ObservationTracing;
import dev.pgoutbox.relay.otel.OpenTelemetryTracing;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.tracing.Tracer;
import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.OpenTelemetry;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.util.ClassUtils;

/**
 * Chooses the relay's tracing from what the application has, first match wins: an {@code
 * ObservationRegistry} and a micrometer-tracing {@code Tracer} (Boot's Actuator with a tracing
 * bridge), an {@code OpenTelemetry} bean, the global OpenTelemetry (the Java agent's), else none.
 * An ObservationRegistry without a Tracer does not trace (Boot makes one for metrics alone), so it
 * does not count. Each library's types are named only in a nested class that is loaded once the
 * library is known to be there.
 */
final class RelayTracingSelection {

  private RelayTracingSelection() {}

  static PublishTracing select(BeanFactory beans, PgOutboxProperties.Tracing properties) {
    if (!properties.isEnabled()) {
      return PublishTracing.NONE;
    }
    boolean link = properties.isLinkToStoredContext();
    ClassLoader loader = RelayTracingSelection.class.getClassLoader();
    if (ClassUtils.isPresent("dev.pgoutbox.relay.micrometer.ObservationTracing", loader)
        && ClassUtils.isPresent("io.micrometer.observation.ObservationRegistry", loader)
        && ClassUtils.isPresent("io.micrometer.tracing.Tracer", loader)) {
      PublishTracing observed = Observations.tracing(beans, link);
      if (observed != null) {
        return observed;
      }
    }
    if (ClassUtils.isPresent("dev.pgoutbox.relay.otel.OpenTelemetryTracing", loader)
        && ClassUtils.isPresent("io.opentelemetry.api.OpenTelemetry", loader)) {
      PublishTracing otel = OpenTelemetries.tracing(beans, link);
      if (otel != null) {
        return otel;
      }
    }
    return PublishTracing.NONE;
  }

  /** Names Micrometer types: loaded only when micrometer-observation and -tracing are there. */
  private static final class Observations {

    static @Nullable PublishTracing tracing(BeanFactory beans, boolean link) {
      ObservationRegistry registry = beans.getBeanProvider(ObservationRegistry.class).getIfUnique();
      Tracer tracer = beans.getBeanProvider(Tracer.class).getIfUnique();
      if (registry == null || tracer == null || tracer == Tracer.NOOP) {
        return null;
      }
      return ObservationTracing.builder(registry).tracer(tracer).linkToStoredContext(link).build();
    }
  }

  /** Names OpenTelemetry types: loaded only when opentelemetry-api is there. */
  private static final class OpenTelemetries {

    static @Nullable PublishTracing tracing(BeanFactory beans, boolean link) {
      OpenTelemetry otel = beans.getBeanProvider(OpenTelemetry.class).getIfUnique();
      if (otel == null) {
        // The global instance only when one was set: asking for it otherwise would fix a no-op one.
        if (OpenTelemetryTracing.globalIfSet() == null) {
          return null;
        }
        otel = GlobalOpenTelemetry.get();
      }
      return OpenTelemetryTracing.builder(otel).linkToStoredContext(link).build();
    }
  }
}

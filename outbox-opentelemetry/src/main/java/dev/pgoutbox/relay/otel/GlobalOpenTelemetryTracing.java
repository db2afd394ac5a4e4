package dev.pgoutbox.relay.otel;

import dev.pgoutbox.relay.AutomaticTracing;
import dev.pgoutbox.relay.PublishTracing;
import org.jspecify.annotations.Nullable;

/**
 * The relay's default tracing with this module on the class path: {@link
 * OpenTelemetryTracing#globalIfSet()}. Registered in {@code
 * META-INF/services/dev.pgoutbox.relay.AutomaticTracing}; hosts do not call it.
 */
public final class GlobalOpenTelemetryTracing implements AutomaticTracing {

  /** Called by {@link java.util.ServiceLoader}. */
  public GlobalOpenTelemetryTracing() {}

  @Override
  public @Nullable PublishTracing tracing() {
    return OpenTelemetryTracing.globalIfSet();
  }
}

package dev.pgoutbox.relay;

import org.jspecify.annotations.Nullable;

/**
 * The tracing a relay uses when its builder is given none: the relay asks each implementation found
 * with {@link java.util.ServiceLoader} (a {@code
 * META-INF/services/dev.pgoutbox.relay.AutomaticTracing} entry) and takes the first that answers.
 * pgoutbox-opentelemetry registers one that answers with the global OpenTelemetry when the Java
 * agent or the host has set it; without any, the relay traces nothing ({@link
 * PublishTracing#NONE}). Implementations need a public no-argument constructor and must be
 * thread-safe.
 */
public interface AutomaticTracing {

  /** The tracing to use, or null when this implementation has none to offer now. */
  @Nullable PublishTracing tracing();
}

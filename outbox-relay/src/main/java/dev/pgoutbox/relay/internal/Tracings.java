package dev.pgoutbox.relay.internal;

import dev.pgoutbox.relay.AutomaticTracing;
import dev.pgoutbox.relay.PublishTracing;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;

/**
 * The relay's default tracing: the first {@link AutomaticTracing} on the class path that answers.
 */
public final class Tracings {

  private Tracings() {}

  /**
   * What the first {@link AutomaticTracing} found with {@link ServiceLoader} answers (with
   * pgoutbox-opentelemetry: the global OpenTelemetry when one was set); {@link PublishTracing#NONE}
   * otherwise. A provider that cannot load (a missing dependency) is passed over.
   */
  public static PublishTracing automatic() {
    try {
      for (AutomaticTracing provider :
          ServiceLoader.load(AutomaticTracing.class, Tracings.class.getClassLoader())) {
        PublishTracing tracing = provider.tracing();
        if (tracing != null) {
          return tracing;
        }
      }
    } catch (ServiceConfigurationError | LinkageError e) {
      return PublishTracing.NONE;
    }
    return PublishTracing.NONE;
  }
}

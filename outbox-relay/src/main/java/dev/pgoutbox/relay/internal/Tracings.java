package dev.pgoutbox.relay.internal;

import dev.pgoutbox.relay.PublishTracing;

/** The relay's default tracing; names no OpenTelemetry type, so it loads without it. */
public final class Tracings {

  private Tracings() {}

  /**
   * OpenTelemetry tracing with the global instance when the API is on the class path and a global
   * instance was set (the Java agent, or the host); {@link PublishTracing#NONE} otherwise.
   */
  public static PublishTracing automatic() {
    try {
      Class.forName(
          "io.opentelemetry.api.GlobalOpenTelemetry", false, Tracings.class.getClassLoader());
    } catch (ClassNotFoundException | LinkageError e) {
      return PublishTracing.NONE;
    }
    return GlobalTracing.ifSet();
  }
}

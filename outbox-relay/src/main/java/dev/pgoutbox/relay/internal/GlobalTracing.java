package dev.pgoutbox.relay.internal;

import dev.pgoutbox.relay.PublishTracing;
import dev.pgoutbox.relay.otel.OpenTelemetryTracing;

/** Names OpenTelemetry types: loaded by {@link Tracings} only when the API is there. */
final class GlobalTracing {

  private GlobalTracing() {}

  static PublishTracing ifSet() {
    PublishTracing global = OpenTelemetryTracing.globalIfSet();
    return global == null ? PublishTracing.NONE : global;
  }
}

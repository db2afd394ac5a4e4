package dev.pgoutbox.relay.internal;

import dev.pgoutbox.relay.PublishTracing;
import dev.pgoutbox.relay.otel.OpenTelemetryTracing;
import io.opentelemetry.api.GlobalOpenTelemetry;

/** Names OpenTelemetry types: loaded by {@link Tracings} only when the API is there. */
final class GlobalTracing {

  private GlobalTracing() {}

  static PublishTracing ifSet() {
    return GlobalOpenTelemetry.isSet() ? OpenTelemetryTracing.global() : PublishTracing.NONE;
  }
}

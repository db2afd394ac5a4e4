package dev.pgoutbox.tools.bench;

import dev.pgoutbox.relay.micrometer.ObservationTracing;
import dev.pgoutbox.relay.otel.OpenTelemetryTracing;
import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.tracing.handler.DefaultTracingObservationHandler;
import io.micrometer.tracing.handler.PropagatingReceiverTracingObservationHandler;
import io.micrometer.tracing.handler.PropagatingSenderTracingObservationHandler;
import io.micrometer.tracing.otel.bridge.OtelCurrentTraceContext;
import io.micrometer.tracing.otel.bridge.OtelPropagator;
import io.micrometer.tracing.otel.bridge.OtelTracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.BatchSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A drain with the relay's tracing on, through OpenTelemetry or Micrometer's Observation API: the
 * SDK as a host would run it (a batch span processor, the default always-on sampler for parentless
 * spans, parent-based otherwise), exporting to an exporter that counts and drops, so the figure is
 * the relay's cost, not a collector's.
 */
final class BenchTracing {

  private BenchTracing() {}

  static Drains.Outcome drain(
      BenchDatabase db, Drains.Setup setup, Drains.PublisherFactory publishers, boolean link)
      throws Exception {
    try (OpenTelemetrySdk otel = sdk()) {
      return Drains.relays(
          db,
          setup,
          publishers,
          OpenTelemetryTracing.builder(otel).linkToStoredContext(link).build(),
          true);
    }
  }

  /**
   * A drain with the relay's Micrometer Observation bridge, spans parented to the stored context:
   * micrometer-tracing on the same SDK and a meter handler, registered as Spring Boot registers
   * them (the tracing handlers first-matching, the meter handler beside them).
   */
  static Drains.Outcome observed(
      BenchDatabase db, Drains.Setup setup, Drains.PublisherFactory publishers) throws Exception {
    try (OpenTelemetrySdk otel = sdk()) {
      io.opentelemetry.api.trace.Tracer otelTracer = otel.getTracer("pgoutbox-bench");
      OtelTracer tracer = new OtelTracer(otelTracer, new OtelCurrentTraceContext(), event -> {});
      OtelPropagator propagator = new OtelPropagator(otel.getPropagators(), otelTracer);
      ObservationRegistry registry = ObservationRegistry.create();
      registry
          .observationConfig()
          .observationHandler(
              new ObservationHandler.FirstMatchingCompositeObservationHandler(
                  List.of(
                      new PropagatingSenderTracingObservationHandler<>(tracer, propagator),
                      new PropagatingReceiverTracingObservationHandler<>(tracer, propagator),
                      new DefaultTracingObservationHandler(tracer))))
          .observationHandler(new DefaultMeterObservationHandler(new SimpleMeterRegistry()));
      return Drains.relays(
          db, setup, publishers, ObservationTracing.builder(registry).tracer(tracer).build(), true);
    }
  }

  /** The SDK as a host runs it, exporting to an exporter that counts and drops. */
  private static OpenTelemetrySdk sdk() {
    AtomicLong exported = new AtomicLong();
    SpanExporter discard =
        new SpanExporter() {
          @Override
          public CompletableResultCode export(Collection<SpanData> spans) {
            exported.addAndGet(spans.size());
            return CompletableResultCode.ofSuccess();
          }

          @Override
          public CompletableResultCode flush() {
            return CompletableResultCode.ofSuccess();
          }

          @Override
          public CompletableResultCode shutdown() {
            return CompletableResultCode.ofSuccess();
          }
        };
    return OpenTelemetrySdk.builder()
        .setTracerProvider(
            SdkTracerProvider.builder()
                .addSpanProcessor(BatchSpanProcessor.builder(discard).build())
                .build())
        .setPropagators(ContextPropagators.create(W3CTraceContextPropagator.getInstance()))
        .build();
  }
}

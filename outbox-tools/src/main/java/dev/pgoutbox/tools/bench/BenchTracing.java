package dev.pgoutbox.tools.bench;

import dev.pgoutbox.relay.otel.OpenTelemetryTracing;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.BatchSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.util.Collection;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A drain with the relay's OpenTelemetry tracing on: the SDK as a host would run it (a batch span
 * processor, the default always-on sampler for parentless spans, parent-based otherwise), exporting
 * to an exporter that counts and drops, so the figure is the relay's cost, not a collector's.
 */
final class BenchTracing {

  private BenchTracing() {}

  static Drains.Outcome drain(
      BenchDatabase db, Drains.Setup setup, Drains.PublisherFactory publishers, boolean link)
      throws Exception {
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
    try (OpenTelemetrySdk otel =
        OpenTelemetrySdk.builder()
            .setTracerProvider(
                SdkTracerProvider.builder()
                    .addSpanProcessor(BatchSpanProcessor.builder(discard).build())
                    .build())
            .build()) {
      return Drains.relays(
          db,
          setup,
          publishers,
          OpenTelemetryTracing.builder(otel).linkToStoredContext(link).build(),
          true);
    }
  }
}

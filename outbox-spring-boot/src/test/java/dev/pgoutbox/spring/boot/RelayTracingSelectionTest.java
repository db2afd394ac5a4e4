package dev.pgoutbox.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.PublishTracing;
import dev.pgoutbox.relay.micrometer.ObservationTracing;
import dev.pgoutbox.relay.otel.OpenTelemetryTracing;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.otel.bridge.OtelCurrentTraceContext;
import io.micrometer.tracing.otel.bridge.OtelTracer;
import io.opentelemetry.api.OpenTelemetry;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.support.DefaultListableBeanFactory;

/** Which tracing the starter gives the relay, for each thing an application may have. */
class RelayTracingSelectionTest {

  static final OpenTelemetry OTEL = OpenTelemetry.noop();
  static final Tracer TRACER =
      new OtelTracer(OTEL.getTracer("test"), new OtelCurrentTraceContext(), event -> {});

  @BeforeAll
  static void noGlobalOpenTelemetry() {
    assertThat(OpenTelemetryTracing.globalIfSet())
        .as("nothing here sets the global instance")
        .isNull();
  }

  @Test
  void anObservationRegistryWithATracerWinsOverOpenTelemetry() {
    PublishTracing chosen = select(enabled(), ObservationRegistry.create(), TRACER, OTEL);
    assertThat(chosen).isInstanceOf(ObservationTracing.class);
    assertThat(chosen.toString()).contains("parented to");
  }

  @Test
  void anObservationRegistryWithoutATracerDoesNotTrace() {
    assertThat(select(enabled(), ObservationRegistry.create(), OTEL))
        .isInstanceOf(OpenTelemetryTracing.class);
    assertThat(select(enabled(), ObservationRegistry.create())).isSameAs(PublishTracing.NONE);
    assertThat(select(enabled(), ObservationRegistry.create(), Tracer.NOOP))
        .isSameAs(PublishTracing.NONE);
  }

  @Test
  void anOpenTelemetryBeanAlone() {
    PublishTracing chosen = select(enabled(), OTEL);
    assertThat(chosen).isInstanceOf(OpenTelemetryTracing.class);
    assertThat(chosen.toString()).contains("parented");
  }

  @Test
  void nothingToTraceWith() {
    assertThat(select(enabled())).isSameAs(PublishTracing.NONE);
  }

  @Test
  void linkToStoredContextReachesEitherBridge() {
    PgOutboxProperties.Tracing linked = enabled();
    linked.setLinkToStoredContext(true);
    assertThat(select(linked, ObservationRegistry.create(), TRACER).toString()).contains("linked");
    assertThat(select(linked, OTEL).toString()).contains("linked");
  }

  @Test
  void disabledWiresNothingWhateverTheApplicationHas() {
    PgOutboxProperties.Tracing off = new PgOutboxProperties.Tracing();
    off.setEnabled(false);
    assertThat(select(off, ObservationRegistry.create(), TRACER, OTEL))
        .isSameAs(PublishTracing.NONE);
  }

  private static PgOutboxProperties.Tracing enabled() {
    PgOutboxProperties.Tracing tracing = new PgOutboxProperties.Tracing();
    assertThat(tracing.isEnabled()).isTrue();
    assertThat(tracing.isLinkToStoredContext()).isFalse();
    return tracing;
  }

  private static PublishTracing select(PgOutboxProperties.Tracing properties, Object... beans) {
    DefaultListableBeanFactory factory = new DefaultListableBeanFactory();
    for (Object bean : beans) {
      factory.registerSingleton(bean.getClass().getName(), bean);
    }
    return RelayTracingSelection.select(factory, properties);
  }
}

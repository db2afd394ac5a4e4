package dev.pgoutbox.relay.otel;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.AutomaticTracing;
import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.relay.testing.ExportedSpans;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.TestSchema;
import io.opentelemetry.api.GlobalOpenTelemetry;
import java.util.ServiceLoader;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A relay built without {@code tracing(...)} finds this module through {@link AutomaticTracing} and
 * traces with the global OpenTelemetry once one is set, and traces nothing while none is.
 */
class AutomaticTracingIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  @RegisterExtension static final ExportedSpans spans = new ExportedSpans();

  @BeforeEach
  @AfterEach
  void noGlobalInstance() {
    GlobalOpenTelemetry.resetForTest();
    db.execute("truncate outbox_events");
  }

  @Test
  void thisModuleIsRegisteredAsTheRelaysAutomaticTracing() {
    assertThat(
            ServiceLoader.load(AutomaticTracing.class).stream().map(ServiceLoader.Provider::type))
        .containsExactly(GlobalOpenTelemetryTracing.class);
  }

  @Test
  void aRelayWithoutTracingUsesTheGlobalOpenTelemetryOnceOneIsSet() throws Exception {
    GlobalOpenTelemetry.set(spans.openTelemetry());
    EventRows.insert(db.dsl(), "traced", 1);

    try (OutboxRelay relay = relay(new RecordingPublisher())) {
      relay.runOnce();
    }

    assertThat(spans.producers()).hasSize(1);
  }

  @Test
  void aRelayWithoutTracingAndWithoutAGlobalInstanceTracesNothing() throws Exception {
    EventRows.insert(db.dsl(), "untraced", 1);
    RecordingPublisher publisher = new RecordingPublisher();

    try (OutboxRelay relay = relay(publisher)) {
      relay.runOnce();
    }

    assertThat(publisher.delivered()).hasSize(1);
    assertThat(spans.finished()).isEmpty();
  }

  private static OutboxRelay relay(RecordingPublisher publisher) {
    return OutboxRelay.builder()
        .dataSource(db.dataSource())
        .schema(db.schema())
        .publisher(publisher)
        .build();
  }
}

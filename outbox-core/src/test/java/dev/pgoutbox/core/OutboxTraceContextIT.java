package dev.pgoutbox.core;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import dev.pgoutbox.testing.TestSchema;
import io.opentelemetry.api.baggage.Baggage;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The writer stores the caller's OpenTelemetry context in the event's headers, without a hook. */
@SuppressWarnings("try") // A Scope is opened for its effect: the span is current inside it.
class OutboxTraceContextIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static final ObjectMapper JSON = new ObjectMapper();

  private static SdkTracerProvider tracerProvider;
  private static Tracer tracer;

  @BeforeAll
  static void setUp() {
    tracerProvider =
        SdkTracerProvider.builder()
            .addSpanProcessor(SimpleSpanProcessor.create(InMemorySpanExporter.create()))
            .build();
    tracer = tracerProvider.get("test");
  }

  @AfterAll
  static void tearDown() {
    tracerProvider.close();
  }

  @Test
  void appendInsideASpanStoresItsTraceparent() {
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    Span request = tracer.spanBuilder("POST /orders").setSpanKind(SpanKind.SERVER).startSpan();
    UUID id;
    try (Scope scope = request.makeCurrent()) {
      id = append(outbox, event());
    } finally {
      request.end();
    }
    assertThat(headers(id))
        .containsEntry(
            "traceparent",
            "00-"
                + request.getSpanContext().getTraceId()
                + "-"
                + request.getSpanContext().getSpanId()
                + "-"
                + request.getSpanContext().getTraceFlags().asHex())
        .doesNotContainKey("baggage");
  }

  @Test
  void appendAllGivesEveryEventTheSameContext() {
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    Span request = tracer.spanBuilder("POST /orders").startSpan();
    List<UUID> ids;
    try (Scope scope = request.makeCurrent()) {
      ids = db.dsl().transactionResult(tx -> outbox.appendAll(tx.dsl(), List.of(event(), event())));
    } finally {
      request.end();
    }
    String traceId = request.getSpanContext().getTraceId();
    assertThat(ids).allSatisfy(id -> assertThat(headers(id).get("traceparent")).contains(traceId));
  }

  @Test
  void withoutACurrentSpanNoTraceHeaderIsStored() {
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    assertThat(headers(append(outbox, event()))).isEmpty();
  }

  @Test
  void explicitHeadersWinOverTheCurrentContext() {
    Outbox outbox =
        Outbox.builder()
            .schema(db.schema())
            .headers(() -> Map.of("tracestate", "vendor=hook"))
            .build();
    String mine = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    Span request = tracer.spanBuilder("POST /orders").startSpan();
    UUID id;
    try (Scope scope = request.makeCurrent()) {
      id = append(outbox, event().withHeader("traceparent", mine));
    } finally {
      request.end();
    }
    assertThat(headers(id))
        .containsEntry("traceparent", mine)
        .containsEntry("tracestate", "vendor=hook");
  }

  @Test
  void traceContextOffStoresNothing() {
    Outbox outbox = Outbox.builder().schema(db.schema()).traceContext(false).build();
    Span request = tracer.spanBuilder("POST /orders").startSpan();
    UUID id;
    try (Scope scope = request.makeCurrent()) {
      id = append(outbox, event());
    } finally {
      request.end();
    }
    assertThat(headers(id)).isEmpty();
    assertThat(outbox.toString()).contains("traceContext=off");
  }

  @Test
  void baggageIsStoredOnlyWhenAskedFor() {
    Outbox plain = Outbox.builder().schema(db.schema()).build();
    Outbox withBaggage = Outbox.builder().schema(db.schema()).baggage(true).build();
    Span request = tracer.spanBuilder("POST /orders").startSpan();
    UUID without;
    UUID with;
    try (Scope span = request.makeCurrent();
        Scope bag = Baggage.builder().put("tenant", "acme").build().makeCurrent()) {
      without = append(plain, event());
      with = append(withBaggage, event());
    } finally {
      request.end();
    }
    assertThat(headers(without)).containsKey("traceparent").doesNotContainKey("baggage");
    assertThat(headers(with)).containsKey("traceparent").containsEntry("baggage", "tenant=acme");
  }

  private static OutboxEvent event() {
    return OutboxEvent.of("order", "42", "order.created", JsonNodeFactory.instance.objectNode());
  }

  private static UUID append(Outbox outbox, OutboxEvent event) {
    return db.dsl().transactionResult(tx -> outbox.append(tx.dsl(), event));
  }

  private static Map<String, String> headers(UUID id) {
    String json =
        db.dsl()
            .select(OUTBOX_EVENTS.HEADERS)
            .from(OUTBOX_EVENTS)
            .where(OUTBOX_EVENTS.ID.eq(id))
            .fetchSingle(OUTBOX_EVENTS.HEADERS)
            .data();
    try {
      return JSON.readValue(json, new TypeReference<Map<String, String>>() {});
    } catch (Exception e) {
      throw new IllegalStateException(json, e);
    }
  }
}

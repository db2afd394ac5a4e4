package dev.pgoutbox.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpServer;
import dev.pgoutbox.relay.PublishTracing;
import dev.pgoutbox.relay.micrometer.ObservationTracing;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SpanProcessor;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;

/**
 * The relay's tracing in a Boot application that traces with Boot's own micrometer-tracing on
 * OpenTelemetry: the starter wires the Observation bridge, so the request's span, the relay's span
 * and the webhook receiver share one trace; with {@code pgoutbox.relay.tracing.enabled=false}
 * nothing is wired and the receiver gets the request's own context. Spans are kept in memory
 * through a span processor bean, which Boot's OpenTelemetry SDK picks up.
 */
// Observation.Scope is opened for its effect.
@SuppressWarnings("try")
class RelayTracingBootIT {

  @RegisterExtension static final TestSchema db = TestSchema.empty();

  // One per application: closing an application shuts its span processor's exporter down.
  static InMemorySpanExporter exported;
  static final BlockingQueue<Headers> received = new LinkedBlockingQueue<>();
  static HttpServer receiver;

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import(Orders.class)
  static class App {

    @Bean
    SpanProcessor inMemorySpans() {
      return SimpleSpanProcessor.create(exported);
    }
  }

  @BeforeAll
  static void receiver() throws Exception {
    db.execute(Orders.TABLE_DDL.formatted(db.schema()));
    receiver = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    receiver.createContext(
        "/events",
        exchange -> {
          exchange.getRequestBody().readAllBytes();
          received.add(exchange.getRequestHeaders());
          exchange.sendResponseHeaders(200, -1);
          exchange.close();
        });
    receiver.start();
  }

  @AfterAll
  static void stopReceiver() {
    receiver.stop(0);
  }

  @BeforeEach
  void reset() {
    exported = InMemorySpanExporter.create();
    received.clear();
  }

  @Test
  void bootsTracingMakesTheRelaySpanAChildOfTheRequest() throws Exception {
    try (ConfigurableApplicationContext app = start(Map.of())) {
      assertThat(app.getBean(PublishTracing.class)).isInstanceOf(ObservationTracing.class);
      SpanData request = placeOrderInRequest(app, "traced");

      Headers delivered = received.poll(30, TimeUnit.SECONDS);
      assertThat(delivered).as("the event, at the webhook").isNotNull();
      SpanData relay = awaitProducerSpan();
      assertThat(relay.getTraceId()).isEqualTo(request.getTraceId());
      assertThat(relay.getParentSpanId()).isEqualTo(request.getSpanId());
      assertThat(relay.getName()).startsWith("send 127.0.0.1:");
      assertThat(relay.getAttributes().asMap().toString())
          .contains("messaging.system=webhook")
          .contains("pgoutbox.outcome=published");
      assertThat(delivered.getFirst("traceparent"))
          .startsWith("00-" + relay.getTraceId() + "-" + relay.getSpanId() + "-");
    }
  }

  @Test
  void withTracingDisabledNothingIsWiredAndTheRequestsContextGoesThrough() throws Exception {
    try (ConfigurableApplicationContext app =
        start(Map.of("pgoutbox.relay.tracing.enabled", "false"))) {
      assertThat(app.getBean(PublishTracing.class)).isSameAs(PublishTracing.NONE);
      SpanData request = placeOrderInRequest(app, "untraced");

      Headers delivered = received.poll(30, TimeUnit.SECONDS);
      assertThat(delivered).as("the event, at the webhook").isNotNull();
      assertThat(delivered.getFirst("traceparent"))
          .startsWith("00-" + request.getTraceId() + "-" + request.getSpanId() + "-");
      assertThat(producerSpans()).isEmpty();
    }
  }

  /** Places an order inside a request observation, as Boot's web observation would. */
  private static SpanData placeOrderInRequest(ConfigurableApplicationContext app, String id) {
    ObservationRegistry registry = app.getBean(ObservationRegistry.class);
    Observation request = Observation.start("http.server.requests", registry);
    request.contextualName("POST /orders");
    try (Observation.Scope scope = request.openScope()) {
      app.getBean(Orders.class).place(id, false);
    } finally {
      request.stop();
    }
    List<SpanData> spans = exported.getFinishedSpanItems();
    return spans.stream()
        .filter(s -> s.getName().equals("POST /orders"))
        .findFirst()
        .orElseThrow(() -> new AssertionError("No request span among " + spans));
  }

  private static SpanData awaitProducerSpan() {
    Eventually.await("the relay's span", Duration.ofSeconds(30), () -> !producerSpans().isEmpty());
    List<SpanData> producers = producerSpans();
    assertThat(producers).hasSize(1);
    return producers.get(0);
  }

  private static List<SpanData> producerSpans() {
    return exported.getFinishedSpanItems().stream()
        .filter(s -> s.getKind() == SpanKind.PRODUCER)
        .toList();
  }

  private static ConfigurableApplicationContext start(Map<String, Object> extra) {
    Map<String, Object> properties = new HashMap<>();
    properties.put("spring.datasource.url", db.jdbcUrl());
    properties.put("spring.datasource.hikari.maximum-pool-size", 4);
    properties.put("spring.main.banner-mode", "off");
    properties.put("spring.jpa.open-in-view", false);
    properties.put("spring.flyway.enabled", false);
    properties.put("pgoutbox.schema", db.schema());
    properties.put("pgoutbox.relay.poll-interval", "200ms");
    properties.put("pgoutbox.relay.name", "boot-tracing");
    properties.put("pgoutbox.publisher.type", "webhook");
    properties.put(
        "pgoutbox.publisher.webhook.url",
        "http://127.0.0.1:" + receiver.getAddress().getPort() + "/events");
    // Boot samples 10% of traces by default; every one here.
    properties.put("management.tracing.sampling.probability", "1.0");
    properties.putAll(extra);
    return new SpringApplicationBuilder(App.class)
        .web(WebApplicationType.NONE)
        .properties(properties)
        .run();
  }
}

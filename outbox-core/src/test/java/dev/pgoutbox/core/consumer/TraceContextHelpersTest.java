package dev.pgoutbox.core.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.impl.LongStringHelper;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsMessage;
import io.opentelemetry.api.baggage.Baggage;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.context.Context;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;

/**
 * Each broker's helper reads the W3C headers the relay sends back into an OpenTelemetry context.
 */
class TraceContextHelpersTest {

  static final String TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
  static final String SPAN_ID = "00f067aa0ba902b7";
  static final String TRACEPARENT = "00-" + TRACE_ID + "-" + SPAN_ID + "-01";

  @Test
  void kafkaRecordHeaders() {
    RecordHeaders headers = new RecordHeaders();
    headers.add("traceparent", utf8("00-" + "1".repeat(32) + "-" + "2".repeat(16) + "-01"));
    headers.add("traceparent", utf8(TRACEPARENT)); // The last one counts, as for event_id.
    headers.add("tracestate", utf8("vendor=x"));
    headers.add("baggage", utf8("tenant=acme"));
    ConsumerRecord<String, byte[]> record = new ConsumerRecord<>("orders", 0, 0, "42", new byte[0]);
    record.headers().add(headers.lastHeader("traceparent"));
    record.headers().add(headers.lastHeader("tracestate"));
    record.headers().add(headers.lastHeader("baggage"));

    Context context = KafkaTraceContext.extract(record);
    assertRemote(context);
    assertThat(Span.fromContext(context).getSpanContext().getTraceState().get("vendor"))
        .isEqualTo("x");
    assertThat(Baggage.fromContext(context).getEntryValue("tenant")).isEqualTo("acme");
    assertRemote(KafkaTraceContext.extract(headers));
  }

  @Test
  void rabbitMqHeadersAsTheConsumerSeesThem() {
    AMQP.BasicProperties properties =
        new AMQP.BasicProperties.Builder()
            .headers(Map.of("traceparent", LongStringHelper.asLongString(TRACEPARENT)))
            .build();
    assertRemote(RabbitMqTraceContext.extract(properties));
    assertNone(RabbitMqTraceContext.extract(new AMQP.BasicProperties.Builder().build()));
  }

  @Test
  void natsHeaders() {
    Headers headers = new Headers();
    headers.put("traceparent", TRACEPARENT);
    assertRemote(
        NatsTraceContext.extract(
            NatsMessage.builder().subject("outbox.order").headers(headers).data("{}").build()));
    assertNone(
        NatsTraceContext.extract(NatsMessage.builder().subject("outbox.order").data("{}").build()));
  }

  @Test
  void webhookHeadersInAnyCase() {
    assertRemote(WebhookTraceContext.extract(Map.of("Traceparent", List.of(TRACEPARENT))));
    assertNone(WebhookTraceContext.extract(Map.of("Idempotency-Key", List.of("x"))));
  }

  @Test
  void aMalformedTraceparentGivesNoParent() {
    assertNone(WebhookTraceContext.extract(Map.of("traceparent", List.of("00-nonsense"))));
  }

  private static void assertRemote(Context context) {
    SpanContext span = Span.fromContext(context).getSpanContext();
    assertThat(span.isValid()).isTrue();
    assertThat(span.isRemote()).isTrue();
    assertThat(span.getTraceId()).isEqualTo(TRACE_ID);
    assertThat(span.getSpanId()).isEqualTo(SPAN_ID);
    assertThat(span.isSampled()).isTrue();
  }

  private static void assertNone(Context context) {
    assertThat(Span.fromContext(context).getSpanContext().isValid()).isFalse();
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}

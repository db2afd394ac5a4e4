package dev.pgoutbox.core.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class EventMessagesTest {

  private static final UUID ID = UUID.fromString("0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b");

  /** What the server sends: timestamptz_send(now()) followed by the writer's bytes. */
  private static ByteBuffer asStreamed(long micros, byte[] content) {
    return ByteBuffer.allocate(8 + content.length).putLong(micros).put(content).flip();
  }

  @Test
  void everyColumnSurvivesTheRoundTripIncludingMultiByteText() {
    byte[] content =
        EventMessages.encode(
            ID, "order", "ö-42 😀", "order.created", "{\"a\": \"é\"}", "{\"traceparent\":\"x\"}");
    // 2026-12-07 12:00:00.123456 UTC in microseconds since 2000-01-01.
    long micros =
        (OffsetDateTime.of(2026, 12, 7, 12, 0, 0, 123_456_000, ZoneOffset.UTC).toEpochSecond()
                    - 946_684_800L)
                * 1_000_000L
            + 123_456L;
    EventMessages.Decoded decoded = EventMessages.decode(asStreamed(micros, content));
    assertThat(decoded.id()).isEqualTo(ID);
    assertThat(decoded.aggregateType()).isEqualTo("order");
    assertThat(decoded.aggregateId()).isEqualTo("ö-42 😀");
    assertThat(decoded.eventType()).isEqualTo("order.created");
    assertThat(decoded.payload()).isEqualTo("{\"a\": \"é\"}");
    assertThat(decoded.headers()).isEqualTo("{\"traceparent\":\"x\"}");
    assertThat(decoded.createdAt())
        .isEqualTo(OffsetDateTime.of(2026, 12, 7, 12, 0, 0, 123_456_000, ZoneOffset.UTC));
  }

  @Test
  void aTruncatedOrForeignMessageIsRefusedNamingWhy() {
    byte[] content = EventMessages.encode(ID, "order", "1", "t", "{}", "{}");
    byte[] cut = java.util.Arrays.copyOf(content, content.length - 1);
    assertThatThrownBy(() -> EventMessages.decode(asStreamed(0, cut)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("headers is 2 bytes");
    byte[] foreign = content.clone();
    foreign[0] = 7;
    assertThatThrownBy(() -> EventMessages.decode(asStreamed(0, foreign)))
        .hasMessageContaining("message version 7");
    assertThatThrownBy(() -> EventMessages.decode(asStreamed(0, "forged".getBytes())))
        .isInstanceOf(IllegalArgumentException.class);
    byte[] longer = java.util.Arrays.copyOf(content, content.length + 1);
    assertThatThrownBy(() -> EventMessages.decode(asStreamed(0, longer)))
        .hasMessageContaining("1 byte(s) after the headers");
  }

  @Test
  void theStatementQualifiesEveryFunctionAndKeepsTheListsOrder() {
    assertThat(EventMessages.statement(1))
        .isEqualTo(
            "select pg_catalog.pg_logical_emit_message(true, cast(? as pg_catalog.text),"
                + " pg_catalog.byteacat(pg_catalog.timestamptz_send(pg_catalog.now()),"
                + " cast(? as pg_catalog.bytea)))");
    assertThat(EventMessages.statement(2))
        .contains("(values (1, cast(? as pg_catalog.bytea)), (2, cast(? as pg_catalog.bytea)))")
        .contains("order by v.n");
    assertThat(EventMessages.binds("p", List.of(new byte[] {1}, new byte[] {2}))).hasSize(3);
  }
}

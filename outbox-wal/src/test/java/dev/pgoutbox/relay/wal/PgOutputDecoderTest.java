package dev.pgoutbox.relay.wal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgoutbox.relay.internal.ClaimedRow;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The pgoutput messages the WAL reader needs, byte by byte as protocol version 1 sends them. */
class PgOutputDecoderTest {

  @Test
  void decodesATransactionWithAnInsertIntoTheOutbox() throws IOException {
    PgOutputDecoder.Begin begin =
        (PgOutputDecoder.Begin)
            decode(
                out -> {
                  out.writeByte('B');
                  out.writeLong(0x1_0000_0010L);
                  out.writeLong(42);
                  out.writeInt(777);
                });
    assertThat(begin).isEqualTo(new PgOutputDecoder.Begin(0x1_0000_0010L, 42, 777));

    PgOutputDecoder.Relation relation =
        (PgOutputDecoder.Relation)
            decode(
                out -> {
                  out.writeByte('R');
                  out.writeInt(16384);
                  cstring(out, "shop");
                  cstring(out, "outbox_events");
                  out.writeByte('d');
                  List<String> columns =
                      List.of(
                          "id",
                          "position",
                          "aggregate_type",
                          "aggregate_id",
                          "event_type",
                          "payload",
                          "headers",
                          "attempts",
                          "created_at",
                          "parked");
                  out.writeShort(columns.size());
                  for (String column : columns) {
                    out.writeByte(0);
                    cstring(out, column);
                    out.writeInt(25);
                    out.writeInt(-1);
                  }
                });
    assertThat(relation.namespace()).isEqualTo("shop");
    assertThat(relation.columns()).startsWith("id", "position").endsWith("parked");

    PgOutputDecoder.Insert insert =
        (PgOutputDecoder.Insert)
            decode(
                out -> {
                  out.writeByte('I');
                  out.writeInt(16384);
                  out.writeByte('N');
                  String[] values = {
                    "0192f1a4-0000-7000-8000-000000000001",
                    "17",
                    "order",
                    "ö-1",
                    "order.step",
                    "{\"seq\": 1}",
                    "{}",
                    "0",
                    "2026-12-01 11:17:04.123456+00",
                    null
                  };
                  out.writeShort(values.length);
                  for (String value : values) {
                    if (value == null) {
                      out.writeByte('n');
                    } else {
                      byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
                      out.writeByte('t');
                      out.writeInt(bytes.length);
                      out.write(bytes);
                    }
                  }
                });
    WalRows rows = new WalRows("shop");
    rows.relation(relation);
    ClaimedRow row = rows.row(insert);
    assertThat(row).isNotNull();
    assertThat(row.position()).isEqualTo(17);
    assertThat(row.aggregateId()).isEqualTo("ö-1");
    assertThat(row.payload()).isEqualTo("{\"seq\": 1}");
    assertThat(row.createdAt())
        .isEqualTo(OffsetDateTime.of(2026, 12, 1, 11, 17, 4, 123_456_000, ZoneOffset.UTC));
    assertThat(new WalRows("other").row(insert)).as("another schema's table").isNull();

    PgOutputDecoder.Commit commit =
        (PgOutputDecoder.Commit)
            decode(
                out -> {
                  out.writeByte('C');
                  out.writeByte(0);
                  out.writeLong(100);
                  out.writeLong(200);
                  out.writeLong(42);
                });
    assertThat(commit.endLsn()).isEqualTo(200);
  }

  @Test
  void ignoresMessagesItDoesNotNeed() throws IOException {
    assertThat(decode(out -> out.writeByte('Y'))).isEqualTo(new PgOutputDecoder.Ignored('Y'));
    assertThat(decode(out -> out.writeByte('T'))).isEqualTo(new PgOutputDecoder.Ignored('T'));
  }

  @Test
  void decodesALogicalMessageAndRefusesOneWhoseContentIsCut() throws IOException {
    PgOutputDecoder.Message message =
        decode(
            out -> {
              out.writeByte('M');
              out.writeByte(1); // transactional
              out.writeLong(4242);
              cstring(out, "pgoutbox:orders");
              out.writeInt(3);
              out.write(new byte[] {7, 8, 9});
            });
    assertThat(message).isInstanceOf(PgOutputDecoder.LogicalMessage.class);
    PgOutputDecoder.LogicalMessage m = (PgOutputDecoder.LogicalMessage) message;
    assertThat(m.transactional()).isTrue();
    assertThat(m.lsn()).isEqualTo(4242);
    assertThat(m.prefix()).isEqualTo("pgoutbox:orders");
    byte[] content = new byte[m.content().remaining()];
    m.content().get(content);
    assertThat(content).containsExactly(7, 8, 9);
    assertThatThrownBy(
            () ->
                decode(
                    out -> {
                      out.writeByte('M');
                      out.writeByte(0);
                      out.writeLong(1);
                      cstring(out, "p");
                      out.writeInt(10);
                      out.write(new byte[] {1});
                    }))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("content of 10 bytes is truncated");
  }

  @Test
  void refusesATruncatedMessage() {
    assertThatThrownBy(
            () ->
                decode(
                    out -> {
                      out.writeByte('B');
                      out.writeInt(1);
                    }))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("truncated");
  }

  @Test
  void parsesTimestampsInEveryOffsetPostgresqlWrites() {
    assertThat(WalRows.timestamptz("2026-12-01 11:17:04+00"))
        .isEqualTo(OffsetDateTime.of(2026, 12, 1, 11, 17, 4, 0, ZoneOffset.UTC));
    assertThat(WalRows.timestamptz("2026-12-01 11:17:04.5+05:30").getOffset())
        .isEqualTo(ZoneOffset.ofHoursMinutes(5, 30));
    assertThat(WalRows.timestamptz("2026-12-01 11:17:04.123-03").getOffset())
        .isEqualTo(ZoneOffset.ofHours(-3));
  }

  @Test
  void timestampsOutsideTheIsoFormOfYearsOneTo9999AreNotGuessed() {
    assertThat(WalRows.timestamptzOrNull("infinity")).isNull();
    assertThat(WalRows.timestamptzOrNull("-infinity")).isNull();
    assertThat(WalRows.timestamptzOrNull("0044-03-15 12:00:00+00 BC")).isNull();
    assertThat(WalRows.timestamptzOrNull("20000-01-01 00:00:00+00")).isNull();
    assertThat(WalRows.timestamptzOrNull("2026-12-01 11:17:04+00")).isNotNull();
  }

  private interface Writer {
    void write(DataOutputStream out) throws IOException;
  }

  private static PgOutputDecoder.Message decode(Writer writer) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      writer.write(out);
    }
    return PgOutputDecoder.decode(ByteBuffer.wrap(bytes.toByteArray()));
  }

  private static void cstring(DataOutputStream out, String value) throws IOException {
    out.write(value.getBytes(StandardCharsets.UTF_8));
    out.writeByte(0);
  }
}

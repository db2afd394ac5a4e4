package dev.pgoutbox.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.UUID;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.Test;

/** Settings are checked when they are set, with the rule in the message; no database needed. */
class BuildersTest {

  /** A context without a connection: any attempt to use one fails differently. */
  private static final DSLContext NO_CONNECTION = DSL.using(SQLDialect.POSTGRES);

  @Test
  void outboxDefaults() {
    Outbox outbox = Outbox.builder().build();
    assertThat(outbox.schema()).isEqualTo("public");
    assertThat(outbox.serializesWritersPerAggregate()).isTrue();
    assertThat(outbox.transport()).isEqualTo(OutboxTransport.ROWS);
    assertThat(outbox)
        .hasToString(
            "Outbox[schema=public, transport=ROWS, serializeWritersPerAggregate=true,"
                + " headersHook=false,"
                + " traceContext=W3C, maxPayloadBytes=1048576, maxHeaders=64,"
                + " maxHeaderBytes=16384]");
    assertThat(outbox.maxPayloadBytes()).isEqualTo(Outbox.DEFAULT_MAX_PAYLOAD_BYTES);
    assertThat(outbox.maxHeaders()).isEqualTo(Outbox.DEFAULT_MAX_HEADERS);
    assertThat(outbox.maxHeaderBytes()).isEqualTo(Outbox.DEFAULT_MAX_HEADER_BYTES);
  }

  @Test
  void sizeLimitsMustBeWithinTheirBounds() {
    assertThatThrownBy(() -> Outbox.builder().maxPayloadBytes(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("maxPayloadBytes must be between 1 and 267386880, was 0");
    assertThatThrownBy(() -> Outbox.builder().maxPayloadBytes(Outbox.MAX_PAYLOAD_BYTES + 1))
        .hasMessage("maxPayloadBytes must be between 1 and 267386880, was 267386881");
    assertThatThrownBy(() -> Outbox.builder().maxHeaders(-1))
        .hasMessage("maxHeaders must be between 0 and 10000, was -1");
    assertThatThrownBy(() -> Outbox.builder().maxHeaders(10_001))
        .hasMessage("maxHeaders must be between 0 and 10000, was 10001");
    assertThatThrownBy(() -> Outbox.builder().maxHeaderBytes(-1))
        .hasMessage("maxHeaderBytes must be between 0 and 16777216, was -1");
    Outbox outbox =
        Outbox.builder()
            .maxPayloadBytes(Outbox.MAX_PAYLOAD_BYTES)
            .maxHeaders(0)
            .maxHeaderBytes(0)
            .build();
    assertThat(outbox.maxPayloadBytes()).isEqualTo(267_386_880);
    assertThat(outbox.maxHeaders()).isZero();
  }

  @Test
  void schemaMustBeAPlainIdentifier() {
    assertThatThrownBy(() -> Outbox.builder().schema("Outbox"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("schema must be a plain identifier");
    assertThatThrownBy(() -> Outbox.builder().schema("x; drop table y"))
        .hasMessageStartingWith("schema must be a plain identifier");
    assertThatThrownBy(() -> Inbox.builder().schema("s".repeat(64)))
        .hasMessage("schema must be between 1 and 63 characters long, was 64");
    assertThatThrownBy(() -> Inbox.builder().schema(""))
        .hasMessage("schema must be between 1 and 63 characters long, was 0");
  }

  @Test
  void consumerIsCheckedBeforeTheConnectionIsTouched() {
    Inbox inbox = Inbox.builder().build();
    UUID id = UUID.randomUUID();
    assertThatThrownBy(() -> inbox.handleOnce(NO_CONNECTION, " ", id, () -> {}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("consumer must not be blank");
    assertThatThrownBy(() -> inbox.handleOnce(NO_CONNECTION, "c".repeat(201), id, () -> {}))
        .hasMessage("consumer must be at most 200 characters, was 201");
    assertThatThrownBy(() -> inbox.handleOnce(NO_CONNECTION, null, id, () -> {}))
        .hasMessage("consumer must not be null");
    assertThatThrownBy(() -> inbox.handleOnce(NO_CONNECTION, "billing", null, () -> {}))
        .isInstanceOf(NullPointerException.class)
        .hasMessage("eventId");
  }

  @Test
  void purgeArgumentsAreChecked() {
    Inbox inbox = Inbox.builder().build();
    DataSource none =
        (DataSource)
            java.lang.reflect.Proxy.newProxyInstance(
                getClass().getClassLoader(),
                new Class<?>[] {DataSource.class},
                (p, m, a) -> {
                  throw new AssertionError("the data source must not be used");
                });
    assertThatThrownBy(() -> inbox.purgeProcessed(none, Duration.ofSeconds(-1), 10))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("olderThan must not be negative, was PT-1S");
    assertThatThrownBy(() -> inbox.purgeProcessed(none, Duration.ofDays(1), 0))
        .hasMessage("batchSize must be between 1 and 100000, was 0");
    assertThatThrownBy(() -> inbox.purgeProcessed(NO_CONNECTION, Duration.ofDays(1), 100_001))
        .hasMessage("batchSize must be between 1 and 100000, was 100001");
  }
}

package dev.pgoutbox.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.jooq.conf.MappedSchema;
import org.jooq.conf.RenderMapping;
import org.jooq.conf.Settings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class OutboxSchemaTest {

  @ParameterizedTest
  @ValueSource(strings = {"outbox", "public", "_private", "orders_2", "a"})
  void acceptsPlainIdentifiers(String name) {
    assertThat(OutboxSchema.requireValidName(name)).isEqualTo(name);
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "Outbox",
        "2outbox",
        "out-box",
        "out box",
        "outbox; drop table x",
        "\"outbox\"",
        "out.box",
        "outbøx",
        "out\u0000box"
      })
  void refusesNamesThatAreNotPlainIdentifiers(String name) {
    assertThatThrownBy(() -> OutboxSchema.requireValidName(name))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("schema must be a plain identifier");
  }

  @Test
  void refusesEmptyNullAndOverlongNamesWithTheLimit() {
    assertThatThrownBy(() -> OutboxSchema.requireValidName(""))
        .hasMessage("schema must be between 1 and 63 characters long, was 0");
    assertThatThrownBy(() -> OutboxSchema.requireValidName("a".repeat(64)))
        .hasMessage("schema must be between 1 and 63 characters long, was 64");
    assertThatThrownBy(() -> OutboxSchema.requireValidName(null))
        .hasMessage("schema must not be null");
  }

  @Test
  void jooqSettingsMapTheGeneratedSchemaAndKeepTheHostsMappings() {
    var host =
        new Settings()
            .withRenderMapping(
                new RenderMapping()
                    .withSchemata(new MappedSchema().withInput("app").withOutput("app_v2")));
    var mapped = OutboxSchema.mapSchema(host, "outbox");
    assertThat(mapped.getRenderMapping().getSchemata())
        .extracting(s -> s.getInput() + "->" + s.getOutput())
        .containsExactlyInAnyOrder("app->app_v2", "public->outbox");
    assertThat(host.getRenderMapping().getSchemata()).hasSize(1);
    assertThat(OutboxSchema.notifyChannel("outbox")).isEqualTo("pgoutbox_outbox");
  }

  @Test
  void theNotifyChannelFitsTheIdentifierLimitForEverySchemaLength() {
    String longest54 = "s".repeat(54);
    assertThat(OutboxSchema.notifyChannel(longest54)).isEqualTo("pgoutbox_" + longest54);
    String name63 = "a".repeat(21) + "b".repeat(42);
    String channel = OutboxSchema.notifyChannel(name63);
    assertThat(channel).hasSize(63).startsWith("pgoutbox_" + "a".repeat(21) + "_");
    assertThat(OutboxSchema.notifyChannel(name63.substring(0, 62) + "c")).isNotEqualTo(channel);
  }
}

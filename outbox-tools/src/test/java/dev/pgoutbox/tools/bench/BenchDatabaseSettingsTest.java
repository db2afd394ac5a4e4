package dev.pgoutbox.tools.bench;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.testing.EmbeddedPostgresServer;
import java.util.Map;
import org.junit.jupiter.api.Test;

class BenchDatabaseSettingsTest {

  @Test
  void anEmbeddedServerForABenchWritesItsCommitsToDisk() {
    assertThat(BenchDatabase.embeddedSettings(false, Map.of())).containsEntry("fsync", "on");
  }

  @Test
  void theWalRunsDecodeAndAPgSettingWins() {
    Map<String, String> settings =
        BenchDatabase.embeddedSettings(true, Map.of("fsync", "off", "work_mem", "8MB"));

    assertThat(settings)
        .containsAllEntriesOf(EmbeddedPostgresServer.LOGICAL_DECODING)
        .containsEntry("fsync", "off")
        .containsEntry("work_mem", "8MB");
  }
}

package dev.pgoutbox.testing;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BrowserScriptTest {

  @Test
  void aMissingPlaywrightFailsNamingTheCommandThatInstallsIt(@TempDir Path dir) throws Exception {
    Files.writeString(dir.resolve("script.mjs"), "console.log('{}')");
    assertThatThrownBy(() -> BrowserScript.requireTools(dir))
        .isInstanceOf(AssertionError.class)
        .hasMessageMatching("(?s).*(npm ci|apt-get install -y chromium|nodejs).*");
  }
}

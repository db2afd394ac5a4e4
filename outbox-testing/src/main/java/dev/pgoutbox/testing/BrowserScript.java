package dev.pgoutbox.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Runs a Playwright script with {@code node} against headless Chromium, for the tests of pages in a
 * real browser. Chromium is Debian's ({@value #CHROMIUM}); {@code playwright-core} comes from
 * {@code npm ci} in the script's directory (never a browser download). A missing piece fails the
 * test with the command that installs it; nothing is skipped.
 *
 * <pre>{@code
 * String json = BrowserScript.run(dir.resolve("console-test.mjs"), config, Duration.ofMinutes(3));
 * }</pre>
 */
public final class BrowserScript {

  /** Where the tests expect Chromium: Debian's {@code chromium} package. */
  public static final String CHROMIUM = "/usr/bin/chromium";

  private BrowserScript() {}

  /**
   * Fails with how to install them unless {@code node}, {@value #CHROMIUM} and {@code
   * playwright-core} (in {@code scriptDir/node_modules}) are there.
   *
   * @throws AssertionError naming what is missing and the command that installs it
   */
  public static void requireTools(Path scriptDir) {
    if (!Files.isExecutable(Path.of(CHROMIUM))) {
      throw new AssertionError(
          "Chromium is missing at " + CHROMIUM + ": install it with `apt-get install -y chromium`");
    }
    if (!onPath("node")) {
      throw new AssertionError(
          "node is not on the PATH: install Node.js (Debian: `apt-get install -y nodejs npm`)");
    }
    if (!Files.isDirectory(scriptDir.resolve("node_modules/playwright-core"))) {
      throw new AssertionError(
          "playwright-core is not installed in "
              + scriptDir
              + ": run `npm ci` there (.ci/run does); never `npx playwright install`, the tests use "
              + CHROMIUM);
    }
  }

  /**
   * Runs {@code node script configFile} in the script's directory and returns its standard output;
   * its standard error goes to this process's.
   *
   * @throws AssertionError if the tools are missing, node exits with a non-zero code, or it runs
   *     longer than {@code timeout}
   */
  public static String run(Path script, Path configFile, Duration timeout) {
    Path dir = script.toAbsolutePath().getParent();
    requireTools(dir);
    try {
      Process node =
          new ProcessBuilder(
                  List.of("node", script.toAbsolutePath().toString(), configFile.toString()))
              .directory(dir.toFile())
              .redirectError(ProcessBuilder.Redirect.INHERIT)
              .start();
      node.getOutputStream().close();
      CompletableFuture<String> out =
          CompletableFuture.supplyAsync(() -> read(node.getInputStream()));
      if (!node.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
        node.descendants().forEach(ProcessHandle::destroyForcibly);
        node.destroyForcibly();
        throw new AssertionError(script + " ran longer than " + timeout);
      }
      String stdout = out.join();
      if (node.exitValue() != 0) {
        throw new AssertionError(
            script + " exited with " + node.exitValue() + "; its output: " + stdout);
      }
      return stdout;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted while " + script + " ran", e);
    }
  }

  private static String read(InputStream in) {
    try (in) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static boolean onPath(String command) {
    String path = System.getenv("PATH");
    if (path == null) {
      return false;
    }
    for (String dir : path.split(java.io.File.pathSeparator)) {
      if (Files.isExecutable(Path.of(dir, command))) {
        return true;
      }
    }
    return false;
  }
}

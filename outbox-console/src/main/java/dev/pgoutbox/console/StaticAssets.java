package dev.pgoutbox.console;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/** The page's files, read once from this jar ({@code dev/pgoutbox/console/static/}). */
final class StaticAssets {

  /** A file and its content type. */
  record Asset(String contentType, byte[] bytes) {}

  private static final Map<String, String> TYPES =
      Map.of(
          "index.html", "text/html; charset=utf-8",
          "console.css", "text/css; charset=utf-8",
          "console.js", "text/javascript; charset=utf-8",
          "views.js", "text/javascript; charset=utf-8",
          "dom.js", "text/javascript; charset=utf-8");

  private final Map<String, Asset> assets;

  StaticAssets() {
    Map<String, Asset> read = new java.util.HashMap<>();
    TYPES.forEach((name, type) -> read.put(name, new Asset(type, read(name))));
    this.assets = Map.copyOf(read);
  }

  /** The file at {@code path} ({@code ""} is the page); null for anything else. */
  @Nullable Asset get(String path) {
    return assets.get(path.isEmpty() ? "index.html" : path);
  }

  private static byte[] read(String name) {
    String resource = "static/" + name;
    try (InputStream in = StaticAssets.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException("the console's " + resource + " is missing from its jar");
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}

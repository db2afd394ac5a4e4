package dev.pgoutbox.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/** Deletes directory trees, best effort. */
public final class Files2 {

  private Files2() {}

  /** Deletes {@code root} and everything under it; what cannot be deleted stays. */
  public static void deleteRecursively(Path root) {
    if (!Files.exists(root)) {
      return;
    }
    try (Stream<Path> files = Files.walk(root)) {
      files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    } catch (IOException e) {
      // Best effort: a temp dir left behind is harmless.
    }
  }
}

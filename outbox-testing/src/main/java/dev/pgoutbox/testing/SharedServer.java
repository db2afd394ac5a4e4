package dev.pgoutbox.testing;

import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * A test server the tests of this JVM share: resolved on first use by the first thread that asks; a
 * resolution that throws is tried again by the next caller. Thread-safe.
 */
final class SharedServer<T> {

  private final Supplier<T> resolve;
  private volatile @Nullable T instance;

  SharedServer(Supplier<T> resolve) {
    this.resolve = resolve;
  }

  /** The shared server, resolved on first use. */
  T get() {
    T current = instance;
    if (current == null) {
      synchronized (this) {
        current = instance;
        if (current == null) {
          current = resolve.get();
          instance = current;
        }
      }
    }
    return current;
  }

  /**
   * The JDBC URL in environment variable {@code variable}, else in system property {@code
   * property}; null when neither holds one.
   */
  static @Nullable String configuredUrl(String variable, String property) {
    String url = System.getenv(variable);
    if (url == null || url.isBlank()) {
      url = System.getProperty(property);
    }
    return url == null || url.isBlank() ? null : url;
  }
}

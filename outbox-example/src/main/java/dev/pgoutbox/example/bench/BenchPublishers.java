package dev.pgoutbox.example.bench;

/** The publishers a drain can use, by name. */
final class BenchPublishers {

  private BenchPublishers() {}

  static Drains.PublisherFactory forName(String name) {
    return switch (name) {
      case "noop" -> Drains.PublisherFactory.noop();
      default -> throw new IllegalArgumentException("--publisher must be noop, was " + name);
    };
  }
}

package dev.pgoutbox.tools.chaos;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * The publisher-side faults the relays injected, counted from the lines {@link PublisherFaults}
 * printed into the relays' logs ({@code relay-<n>.log} in the run's directory; a killed relay's
 * lines are there too).
 */
record PublisherFaultLog(Map<String, Long> counts, List<String> publishedBeforeTimeout) {

  static PublisherFaultLog read(Path runDir) throws IOException {
    Map<String, Long> counts = new TreeMap<>();
    List<String> published = new ArrayList<>();
    List<Path> logs;
    try (Stream<Path> files = Files.list(runDir)) {
      logs =
          files
              .filter(p -> p.getFileName().toString().matches("relay-\\d+\\.log"))
              .sorted()
              .toList();
    }
    for (Path log : logs) {
      try (Stream<String> lines = Files.lines(log, StandardCharsets.UTF_8)) {
        lines
            .filter(l -> l.startsWith(PublisherFaults.LOG_PREFIX + "kind="))
            .forEach(
                line -> {
                  String rest = line.substring((PublisherFaults.LOG_PREFIX + "kind=").length());
                  int space = rest.indexOf(' ');
                  String kind = space < 0 ? rest : rest.substring(0, space);
                  counts.merge(kind, 1L, Long::sum);
                  String key = "published_before_timeout=";
                  int at = rest.indexOf(key);
                  if (at >= 0) {
                    String ids = rest.substring(at + key.length()).strip();
                    for (String id : ids.split(",")) {
                      if (!id.isEmpty()) {
                        published.add(id);
                      }
                    }
                  }
                });
      } catch (java.io.UncheckedIOException e) {
        // A line cut by a SIGKILL in a multi-byte character: count what could be read.
      }
    }
    return new PublisherFaultLog(counts, published);
  }

  long count(String kind) {
    return counts.getOrDefault(kind, 0L);
  }
}

package dev.pgoutbox.tools.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * A figure in a bench result is measured, never a constant: no {@code .put("lost", 0)} and no
 * delivery check built from literals. (The JSON keys of each scenario are checked against what it
 * measures in {@link BenchSmokeIT}.)
 */
class BenchFiguresTest {

  private static final Path SOURCES = Path.of("src/main/java/dev/pgoutbox/tools/bench");

  private static final String LITERAL = "-?[0-9][0-9_]*(\\.[0-9]+)?[lLdDfF]?|true|false";

  private static final Pattern LITERAL_FIGURE =
      Pattern.compile("\\.put\\(\\s*\"([a-z0-9_]+)\"\\s*,\\s*(" + LITERAL + ")\\s*\\)");

  private static final Pattern LITERAL_CHECK =
      Pattern.compile("new\\s+Deliveries\\.Check\\(([^;]*?)\\)\\s*[;.]", Pattern.DOTALL);

  @Test
  void noResultFigureIsALiteral() throws IOException {
    List<String> literals = new ArrayList<>();
    try (Stream<Path> files = Files.list(SOURCES)) {
      for (Path file : files.filter(f -> f.toString().endsWith(".java")).toList()) {
        String source = Files.readString(file);
        Matcher figure = LITERAL_FIGURE.matcher(source);
        while (figure.find()) {
          literals.add(file.getFileName() + ": " + figure.group());
        }
        Matcher check = LITERAL_CHECK.matcher(source);
        while (check.find()) {
          for (String argument : check.group(1).split(",")) {
            if (argument.strip().matches(LITERAL)) {
              literals.add(file.getFileName() + ": " + check.group().strip());
            }
          }
        }
      }
    }
    assertThat(literals).as("result figures that are constants, not measurements").isEmpty();
  }

  @Test
  void theScanFindsALiteralFigure() {
    assertThat(LITERAL_FIGURE.matcher("result.put(\"reordered\", 0)").find()).isTrue();
    assertThat(LITERAL_FIGURE.matcher("result.put(\"duplicates\", 0L)").find()).isTrue();
    assertThat(LITERAL_FIGURE.matcher(".put(\"lost\", outboxCommits - outboxRows)").find())
        .isFalse();
    Matcher check = LITERAL_CHECK.matcher("new Deliveries.Check(pending, 0, 0);");
    assertThat(check.find()).isTrue();
    assertThat(check.group(1)).isEqualTo("pending, 0, 0");
  }
}

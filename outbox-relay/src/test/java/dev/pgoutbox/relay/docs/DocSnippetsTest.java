package dev.pgoutbox.relay.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The code in the docs pages is the code the tests run: each fenced block that follows a {@code
 * <!-- snippet: path#name -->} line must equal the lines of that source file between {@code //
 * snippet:start name} and {@code // snippet:end name} (common indentation removed), so a page
 * cannot drift from the tested code ({@code docs/custom-publisher.md}, {@code docs/testing.md}).
 */
class DocSnippetsTest {

  private static final List<String> PAGES = List.of("docs/custom-publisher.md", "docs/testing.md");

  private static final Pattern SNIPPET =
      Pattern.compile("<!-- snippet: (\\S+)#(\\S+) -->\\n```java\\n(.*?)```", Pattern.DOTALL);
  private static final Pattern START = Pattern.compile("//\\s*snippet:start (\\S+)");

  @Test
  void everySnippetOnThePageEqualsTheMarkedSourceItQuotes() throws IOException {
    Path root = repositoryRoot();
    Map<String, String> quoted = new LinkedHashMap<>();
    for (String pageName : PAGES) {
      quoteSnippets(root, Files.readString(root.resolve(pageName)), quoted);
    }
    assertThat(quoted.keySet())
        .as("every marked region of the docs package is on a page")
        .containsExactlyInAnyOrderElementsOf(markedRegions(root));
  }

  private static void quoteSnippets(Path root, String page, Map<String, String> quoted)
      throws IOException {
    Matcher m = SNIPPET.matcher(page);
    while (m.find()) {
      Path source = root.resolve(m.group(1));
      String name = m.group(2);
      assertThat(source).as("quoted source").isRegularFile();
      assertThat(m.group(3))
          .as("the block quoting %s#%s (regenerate it from the source)", m.group(1), name)
          .isEqualTo(region(Files.readAllLines(source), name, source));
      quoted.put(source.getFileName() + "#" + name, m.group(1));
    }
  }

  /** The marked lines, common indentation removed, each ending with a newline. */
  private static String region(List<String> lines, String name, Path source) {
    int start = -1;
    int end = -1;
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i).strip();
      if (start < 0 && line.equals("// snippet:start " + name)) {
        start = i;
      } else if (start >= 0 && line.equals("// snippet:end " + name)) {
        end = i;
        break;
      }
    }
    assertThat(start).as("snippet:start %s in %s", name, source).isNotNegative();
    assertThat(end).as("snippet:end %s in %s", name, source).isPositive();
    List<String> body = lines.subList(start + 1, end);
    int indent =
        body.stream()
            .filter(l -> !l.isBlank())
            .mapToInt(l -> l.length() - l.stripLeading().length())
            .min()
            .orElse(0);
    StringBuilder text = new StringBuilder();
    for (String line : body) {
      text.append(line.isBlank() ? "" : line.substring(indent)).append('\n');
    }
    return text.toString();
  }

  private static List<String> markedRegions(Path root) throws IOException {
    Path dir = root.resolve("outbox-relay/src/test/java/dev/pgoutbox/relay/docs");
    List<String> regions = new ArrayList<>();
    try (var files = Files.list(dir)) {
      for (Path file : files.sorted().toList()) {
        for (String line : Files.readAllLines(file)) {
          Matcher m = START.matcher(line.strip());
          if (m.matches()) {
            regions.add(file.getFileName() + "#" + m.group(1));
          }
        }
      }
    }
    return regions;
  }

  /** The repository root: the nearest directory up from the working directory with a docs page. */
  static Path repositoryRoot() {
    for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
      if (Files.isRegularFile(dir.resolve("docs/custom-publisher.md"))) {
        return dir;
      }
    }
    throw new AssertionError(
        "docs/custom-publisher.md not found above " + Path.of("").toAbsolutePath());
  }
}

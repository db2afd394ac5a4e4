package dev.pgoutbox.docs;

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
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The code in the pages is the code the build compiles: every {@code ```java} block of README.md
 * and {@code docs/*.md} follows a {@code <!-- snippet: path#name -->} line (at the block's own
 * indentation) and equals the lines of that source file between {@code // snippet:start name} and
 * {@code // snippet:end name} (common indentation removed). An unmarked java block fails the test,
 * and so does a marked region that no page quotes, so a page cannot drift from compiled code.
 */
class DocSnippetsTest {

  static final String SNIPPETS = "outbox-docs/src/test/java/dev/pgoutbox/docs";

  private static final Pattern MARKER = Pattern.compile("(\\s*)<!-- snippet: (\\S+)#(\\S+) -->");
  private static final Pattern START = Pattern.compile("//\\s*snippet:start (\\S+)");

  @Test
  void everyJavaBlockOnEveryPageEqualsTheMarkedSourceItQuotes() throws IOException {
    Path root = repositoryRoot();
    Map<String, String> quoted = new LinkedHashMap<>();
    List<String> problems = new ArrayList<>();
    List<Path> pages = new ArrayList<>(List.of(root.resolve("README.md")));
    pages.addAll(docsPages(root));
    for (Path page : pages) {
      checkPage(root, page, quoted, problems);
    }
    assertThat(problems).as("java blocks that are not the compiled code they quote").isEmpty();
    assertThat(quoted.keySet())
        .as("every marked region of the docs module is on a page")
        .containsAll(markedRegions(root));
  }

  @Test
  void anUnmarkedJavaBlockAndAStaleCopyAreBothReported(@TempDir Path dir) throws IOException {
    Path page = dir.resolve("page.md");
    Files.writeString(
        page,
        "```java\nint unmarked;\n```\n\n<!-- snippet: "
            + SNIPPETS
            + "/snippets/SecuritySnippets.java#grant -->\n```java\nstale();\n```\n");
    List<String> problems = new ArrayList<>();
    checkPage(repositoryRoot(), page, new LinkedHashMap<>(), problems);
    assertThat(problems).hasSize(2);
    assertThat(problems.get(0)).endsWith("page.md:1: a java block without a snippet marker");
    assertThat(problems.get(1)).contains("page.md:6: differs from").contains("#grant");
  }

  private static void checkPage(
      Path root, Path page, Map<String, String> quoted, List<String> problems) throws IOException {
    List<String> lines = Files.readAllLines(page);
    String name = root.relativize(page).toString();
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i);
      if (!line.stripLeading().startsWith("```")) {
        continue;
      }
      int indent = line.length() - line.stripLeading().length();
      int close = i + 1;
      while (close < lines.size() && !lines.get(close).stripLeading().startsWith("```")) {
        close++;
      }
      if (line.strip().equals("```java")) {
        Matcher marker = i > 0 ? MARKER.matcher(lines.get(i - 1)) : null;
        if (marker == null || !marker.matches()) {
          problems.add(name + ":" + (i + 1) + ": a java block without a snippet marker");
        } else {
          StringBuilder block = new StringBuilder();
          for (String l : lines.subList(i + 1, close)) {
            block.append(l.length() > indent ? l.substring(indent) : l.strip()).append('\n');
          }
          Path source = root.resolve(marker.group(2));
          String region = marker.group(3);
          if (!Files.isRegularFile(source)) {
            problems.add(name + ":" + (i + 1) + ": no source " + marker.group(2));
          } else if (!block.toString().equals(region(Files.readAllLines(source), region, source))) {
            problems.add(
                name
                    + ":"
                    + (i + 1)
                    + ": differs from "
                    + marker.group(2)
                    + "#"
                    + region
                    + " (copy the region onto the page)");
          }
          quoted.put(source.getFileName() + "#" + region, name);
        }
      }
      i = close;
    }
  }

  /** The marked lines, common indentation removed, each ending with a newline. */
  static String region(List<String> lines, String name, Path source) {
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
    List<String> regions = new ArrayList<>();
    try (Stream<Path> files = Files.walk(root.resolve(SNIPPETS))) {
      for (Path file : files.filter(Files::isRegularFile).sorted().toList()) {
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

  /** The pages directly in {@code docs/} (not the dated runs under {@code docs/results/}). */
  static List<Path> docsPages(Path root) throws IOException {
    try (Stream<Path> files = Files.list(root.resolve("docs"))) {
      return files.filter(p -> p.toString().endsWith(".md")).sorted().toList();
    }
  }

  /** The repository root: the nearest directory up from the working directory with a docs page. */
  static Path repositoryRoot() {
    for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
      if (Files.isRegularFile(dir.resolve("docs/README.md"))
          && Files.isDirectory(dir.resolve(SNIPPETS))) {
        return dir;
      }
    }
    throw new AssertionError("docs/README.md not found above " + Path.of("").toAbsolutePath());
  }
}

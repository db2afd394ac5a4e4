package dev.pgoutbox.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every relative link in README.md, CHANGELOG.md and the pages under {@code docs/} leads somewhere:
 * the file exists, and an anchor ({@code page.md#section}, or {@code #section} on the same page)
 * names a heading of that page as GitHub renders its id (lower case, punctuation dropped, spaces as
 * hyphens, {@code -1}, {@code -2} for repeats) or an explicit {@code <a id>}. Links inside code
 * blocks are not links and are skipped. The alert rules' runbook links are checked the same way.
 */
class DocLinksTest {

  private static final Pattern LINK =
      Pattern.compile("\\[[^\\]]*\\]\\(([^)\\s]+)(?:\\s+\"[^\"]*\")?\\)");
  private static final Pattern HEADING = Pattern.compile("^#{1,6}\\s+(.*?)\\s*#*\\s*$");
  private static final Pattern EXPLICIT_ANCHOR = Pattern.compile("<a\\s+(?:id|name)=\"([^\"]+)\"");

  @Test
  void everyRelativeLinkLeadsToAFileAndAHeadingThatExist() throws IOException {
    Path root = DocSnippetsTest.repositoryRoot();
    List<Path> pages =
        new ArrayList<>(List.of(root.resolve("README.md"), root.resolve("CHANGELOG.md")));
    try (Stream<Path> docs = Files.walk(root.resolve("docs"))) {
      docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
    }
    Map<Path, Set<String>> anchorsByPage = new HashMap<>();
    List<String> broken = new ArrayList<>();
    int checked = 0;
    for (Path page : pages) {
      for (String target : links(Files.readString(page))) {
        if (target.matches("^[a-zA-Z][a-zA-Z0-9+.-]*:.*")) {
          continue; // https:, mailto: and other absolute URLs
        }
        checked++;
        int hash = target.indexOf('#');
        String file = hash < 0 ? target : target.substring(0, hash);
        String anchor = hash < 0 ? null : target.substring(hash + 1);
        Path resolved = file.isEmpty() ? page : page.getParent().resolve(file).normalize();
        if (!Files.exists(resolved)) {
          broken.add(root.relativize(page) + ": " + target + " (no such file)");
        } else if (anchor != null && resolved.toString().endsWith(".md")) {
          Set<String> anchors = anchorsByPage.computeIfAbsent(resolved, DocLinksTest::anchorsOf);
          if (!anchors.contains(anchor)) {
            broken.add(root.relativize(page) + ": " + target + " (no such heading)");
          }
        }
      }
    }
    assertThat(checked).as("relative links found").isGreaterThan(50);
    assertThat(broken).as("links that lead nowhere").isEmpty();
  }

  @Test
  void everyRunbookOfTheAlertRulesLeadsToAHeading() throws IOException {
    Path root = DocSnippetsTest.repositoryRoot();
    Matcher runbook =
        Pattern.compile("runbook: \"([^\"#]+)#([^\"]+)\"")
            .matcher(Files.readString(root.resolve("monitoring/prometheus-rules.yml")));
    List<String> broken = new ArrayList<>();
    int checked = 0;
    while (runbook.find()) {
      checked++;
      Path page = root.resolve(runbook.group(1));
      if (!Files.isRegularFile(page) || !anchorsOf(page).contains(runbook.group(2))) {
        broken.add(runbook.group(1) + "#" + runbook.group(2));
      }
    }
    assertThat(checked).as("runbook links in monitoring/prometheus-rules.yml").isGreaterThan(10);
    assertThat(broken).as("runbooks that lead nowhere").isEmpty();
  }

  @Test
  void headingIdsFollowGitHubsRule() {
    assertThat(slug("Sustained load (`bench latency --rate R --seconds 600`)"))
        .isEqualTo("sustained-load-bench-latency---rate-r---seconds-600");
    assertThat(slug("Through real brokers (`bench drain --publisher ...`)"))
        .isEqualTo("through-real-brokers-bench-drain---publisher-");
    assertThat(slug("With WAL relays (`--source wal`)")).isEqualTo("with-wal-relays---source-wal");
  }

  /** The link targets of a page, outside fenced code blocks and inline code. */
  private static List<String> links(String page) {
    List<String> targets = new ArrayList<>();
    for (String line : linesOutsideCodeBlocks(page)) {
      Matcher m = LINK.matcher(line.replaceAll("`[^`]*`", "``"));
      while (m.find()) {
        targets.add(m.group(1));
      }
    }
    return targets;
  }

  /** The lines of a page that are not in a fenced code block (nor its fences). */
  private static List<String> linesOutsideCodeBlocks(String page) {
    List<String> prose = new ArrayList<>();
    boolean fenced = false;
    for (String line : page.split("\n", -1)) {
      if (line.stripLeading().startsWith("```")) {
        fenced = !fenced;
      } else if (!fenced) {
        prose.add(line);
      }
    }
    return prose;
  }

  private static Set<String> anchorsOf(Path page) {
    String text;
    try {
      text = Files.readString(page);
    } catch (IOException e) {
      throw new IllegalStateException("cannot read " + page, e);
    }
    Set<String> anchors = new HashSet<>();
    Map<String, Integer> seen = new HashMap<>();
    for (String line : linesOutsideCodeBlocks(text)) {
      Matcher heading = HEADING.matcher(line);
      if (heading.matches()) {
        String id = slug(heading.group(1));
        int repeat = seen.merge(id, 1, Integer::sum) - 1;
        anchors.add(repeat == 0 ? id : id + "-" + repeat);
      }
      Matcher explicit = EXPLICIT_ANCHOR.matcher(line);
      while (explicit.find()) {
        anchors.add(explicit.group(1));
      }
    }
    return anchors;
  }

  /**
   * GitHub's heading id: lower case, only letters, digits, spaces, hyphens and underscores kept.
   */
  static String slug(String heading) {
    String text = heading.replaceAll("\\[([^\\]]*)\\]\\([^)]*\\)", "$1").toLowerCase(Locale.ROOT);
    StringBuilder id = new StringBuilder();
    text.codePoints()
        .forEach(
            c -> {
              if (Character.isLetterOrDigit(c) || c == '-' || c == '_') {
                id.appendCodePoint(c);
              } else if (c == ' ') {
                id.append('-');
              }
            });
    return id.toString();
  }
}

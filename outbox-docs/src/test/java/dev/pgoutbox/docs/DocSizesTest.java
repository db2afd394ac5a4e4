package dev.pgoutbox.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The pages stay reference pages a reader can take in: README.md at most {@value #README_LIMIT}
 * bytes, each page {@code docs/*.md} at most {@value #PAGE_LIMIT} bytes. Dated runs belong in
 * {@code docs/results/}, which has no limit; a page that grows past its limit is split by topic.
 */
class DocSizesTest {

  static final int README_LIMIT = 15 * 1024;
  static final int PAGE_LIMIT = 25 * 1024;

  @Test
  void theReadmeAndEveryDocsPageStayWithinTheirLimits() throws IOException {
    Path root = DocSnippetsTest.repositoryRoot();
    List<String> over = new ArrayList<>();
    long readme = Files.size(root.resolve("README.md"));
    if (readme > README_LIMIT) {
      over.add("README.md: " + readme + " bytes, the limit is " + README_LIMIT);
    }
    List<Path> pages = DocSnippetsTest.docsPages(root);
    assertThat(pages).as("pages in docs/").hasSizeGreaterThan(10);
    for (Path page : pages) {
      long size = Files.size(page);
      if (size > PAGE_LIMIT) {
        over.add(root.relativize(page) + ": " + size + " bytes, the limit is " + PAGE_LIMIT);
      }
    }
    assertThat(over).as("pages over their size limit (split them by topic)").isEmpty();
  }

  @Test
  void theDocsIndexListsEveryPage() throws IOException {
    Path root = DocSnippetsTest.repositoryRoot();
    String index = Files.readString(root.resolve("docs/README.md"));
    List<String> unlisted = new ArrayList<>();
    for (Path page : DocSnippetsTest.docsPages(root)) {
      String name = page.getFileName().toString();
      if (!name.equals("README.md") && !index.contains("](" + name)) {
        unlisted.add(name);
      }
    }
    assertThat(unlisted).as("pages the docs index (docs/README.md) does not link").isEmpty();
  }
}

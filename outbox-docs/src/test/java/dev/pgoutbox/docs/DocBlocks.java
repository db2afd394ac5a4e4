package dev.pgoutbox.docs;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The fenced code blocks of README.md and {@code docs/*.md}, by language. */
record DocBlocks(String page, int line, String language, String text) {

  /** Every fenced block of the given language on every page, in page order. */
  static List<DocBlocks> of(String language) throws IOException {
    Path root = DocSnippetsTest.repositoryRoot();
    List<Path> pages = new ArrayList<>(List.of(root.resolve("README.md")));
    pages.addAll(DocSnippetsTest.docsPages(root));
    List<DocBlocks> blocks = new ArrayList<>();
    for (Path page : pages) {
      List<String> lines = Files.readAllLines(page);
      for (int i = 0; i < lines.size(); i++) {
        String open = lines.get(i);
        if (!open.stripLeading().startsWith("```")) {
          continue;
        }
        int indent = open.length() - open.stripLeading().length();
        int close = i + 1;
        StringBuilder text = new StringBuilder();
        while (close < lines.size() && !lines.get(close).stripLeading().startsWith("```")) {
          String l = lines.get(close);
          text.append(l.length() > indent ? l.substring(indent) : l.strip()).append('\n');
          close++;
        }
        if (open.strip().equals("```" + language)) {
          blocks.add(
              new DocBlocks(root.relativize(page).toString(), i + 1, language, text.toString()));
        }
        i = close;
      }
    }
    return blocks;
  }

  @Override
  public String toString() {
    return page + ":" + line;
  }
}

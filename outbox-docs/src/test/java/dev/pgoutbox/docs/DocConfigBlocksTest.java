package dev.pgoutbox.docs;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The configuration the pages show is configuration the build knows: every {@code pgoutbox.*} key
 * of a {@code ```properties} block is a property of the Spring Boot starter's metadata; every
 * {@code dev.pgoutbox} artifact of an {@code ```xml} block is a module of this build, at its
 * version; every {@code <x.version>} an xml block sets equals the parent pom's.
 */
class DocConfigBlocksTest {

  private static final Pattern KEY = Pattern.compile("(?m)^\\s*([A-Za-z0-9_.\\[\\]-]+)\\s*[=:]");
  private static final Pattern DEPENDENCY = Pattern.compile("(?s)<dependency>(.*?)</dependency>");
  private static final Pattern PROPERTY = Pattern.compile("<([a-z0-9.-]+\\.version)>([^<]+)</\\1>");

  @Test
  void everyPgoutboxPropertyOnAPageIsOneTheStarterDeclares() throws IOException {
    Set<String> declared = starterProperties();
    assertThat(declared).as("the starter's metadata").contains("pgoutbox.schema");
    List<String> unknown = new ArrayList<>();
    int checked = 0;
    for (DocBlocks block : DocBlocks.of("properties")) {
      Matcher key = KEY.matcher(block.text());
      while (key.find()) {
        if (key.group(1).startsWith("pgoutbox.")) {
          checked++;
          if (!declared.contains(key.group(1))) {
            unknown.add(block + ": " + key.group(1));
          }
        }
      }
    }
    assertThat(checked).as("pgoutbox properties on the pages").isGreaterThan(5);
    assertThat(unknown).as("properties the starter does not declare").isEmpty();
  }

  @Test
  void everyPgoutboxArtifactOnAPageIsAModuleOfThisBuildAtItsVersion() throws IOException {
    Path root = DocSnippetsTest.repositoryRoot();
    Set<String> modules = moduleArtifacts(root);
    String version = tag(Files.readString(root.resolve("pom.xml")), "version");
    List<String> wrong = new ArrayList<>();
    int checked = 0;
    for (DocBlocks block : DocBlocks.of("xml")) {
      Matcher dependency = DEPENDENCY.matcher(block.text());
      while (dependency.find()) {
        String d = dependency.group(1);
        if (!"dev.pgoutbox".equals(tag(d, "groupId"))) {
          continue;
        }
        checked++;
        String artifact = tag(d, "artifactId");
        String v = tag(d, "version");
        if (!modules.contains(artifact)) {
          wrong.add(block + ": " + artifact + " is no module of this build " + modules);
        } else if (v != null && !v.startsWith("${") && !v.equals(version)) {
          wrong.add(block + ": " + artifact + " at " + v + ", the build is at " + version);
        }
      }
    }
    assertThat(checked).as("pgoutbox artifacts on the pages").isGreaterThan(2);
    assertThat(wrong).isEmpty();
  }

  @Test
  void everyVersionPropertyOnAPageIsTheParentPomsOwn() throws IOException {
    String parent = Files.readString(DocSnippetsTest.repositoryRoot().resolve("pom.xml"));
    Map<String, String> versions = new HashMap<>();
    Matcher p = PROPERTY.matcher(parent);
    while (p.find()) {
      versions.putIfAbsent(p.group(1), p.group(2));
    }
    List<String> wrong = new ArrayList<>();
    for (DocBlocks block : DocBlocks.of("xml")) {
      Matcher m = PROPERTY.matcher(block.text());
      while (m.find()) {
        if (!m.group(2).equals(versions.get(m.group(1)))) {
          wrong.add(
              block
                  + ": "
                  + m.group(1)
                  + " "
                  + m.group(2)
                  + ", the parent pom has "
                  + versions.get(m.group(1)));
        }
      }
    }
    assertThat(wrong).isEmpty();
  }

  private static Set<String> starterProperties() throws IOException {
    Set<String> names = new HashSet<>();
    Enumeration<URL> files =
        DocConfigBlocksTest.class
            .getClassLoader()
            .getResources("META-INF/spring-configuration-metadata.json");
    while (files.hasMoreElements()) {
      try (InputStream in = files.nextElement().openStream()) {
        JsonNode properties = new ObjectMapper().readTree(in).get("properties");
        if (properties != null) {
          properties.forEach(node -> names.add(node.get("name").asText()));
        }
      }
    }
    return names;
  }

  private static Set<String> moduleArtifacts(Path root) throws IOException {
    Set<String> artifacts = new HashSet<>();
    try (Stream<Path> dirs = Files.list(root)) {
      for (Path pom : dirs.map(d -> d.resolve("pom.xml")).filter(Files::isRegularFile).toList()) {
        String text = Files.readString(pom);
        // The module's own artifactId: the first one after the parent block.
        int parentEnd = text.indexOf("</parent>");
        artifacts.add(tag(text.substring(Math.max(parentEnd, 0)), "artifactId"));
      }
    }
    return artifacts;
  }

  private static String tag(String xml, String name) {
    Matcher m = Pattern.compile("<" + name + ">\\s*([^<\\s]+)\\s*</" + name + ">").matcher(xml);
    return m.find() ? m.group(1) : null;
  }
}

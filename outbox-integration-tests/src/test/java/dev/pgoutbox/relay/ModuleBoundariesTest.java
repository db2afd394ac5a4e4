package dev.pgoutbox.relay;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The module layout keeps its promises: the BOM lists every published module, the integration
 * modules use the relay's public API only, never its {@code internal} package, and the relays know
 * nothing of the operator API (pgoutbox-admin depends on the relay, never the other way).
 */
class ModuleBoundariesTest {

  /** Modules that are not published as a library: nothing for a host to import. */
  private static final Set<String> UNPUBLISHED =
      Set.of(
          "outbox-example",
          "outbox-tools",
          "outbox-integration-tests",
          "outbox-docs",
          "outbox-bom");

  private static final List<String> INTEGRATIONS =
      List.of(
          "outbox-kafka",
          "outbox-rabbitmq",
          "outbox-nats",
          "outbox-webhook",
          "outbox-opentelemetry",
          "outbox-micrometer");

  private static final Pattern MODULE = Pattern.compile("<module>([^<]+)</module>");
  private static final Pattern ARTIFACT =
      Pattern.compile("</parent>\\s*<artifactId>([^<]+)</artifactId>");

  @Test
  void theBomListsEveryPublishedModule() throws IOException {
    Path root = repositoryRoot();
    List<String> published = new ArrayList<>();
    Matcher m = MODULE.matcher(Files.readString(root.resolve("pom.xml")));
    while (m.find()) {
      if (!UNPUBLISHED.contains(m.group(1))) {
        Matcher a = ARTIFACT.matcher(Files.readString(root.resolve(m.group(1)).resolve("pom.xml")));
        assertThat(a.find()).as("artifactId of %s", m.group(1)).isTrue();
        published.add(a.group(1));
      }
    }
    assertThat(published).contains("pgoutbox-relay", "pgoutbox-kafka", "pgoutbox-micrometer");
    String bom = Files.readString(root.resolve("outbox-bom/pom.xml"));
    assertThat(published)
        .allSatisfy(
            artifact ->
                assertThat(bom)
                    .as("outbox-bom/pom.xml lists %s", artifact)
                    .contains("<artifactId>" + artifact + "</artifactId>"));
  }

  @Test
  void integrationModulesUseTheRelaysPublicApiOnly() throws IOException {
    Path root = repositoryRoot();
    List<String> offenders = new ArrayList<>();
    for (String module : INTEGRATIONS) {
      try (Stream<Path> sources = Files.walk(root.resolve(module).resolve("src/main/java"))) {
        for (Path source : sources.filter(p -> p.toString().endsWith(".java")).toList()) {
          if (Files.readString(source).contains("dev.pgoutbox.relay.internal")) {
            offenders.add(root.relativize(source).toString());
          }
        }
      }
    }
    assertThat(offenders).as("sources naming dev.pgoutbox.relay.internal").isEmpty();
  }

  @Test
  void theRelaysDoNotDependOnTheAdmin() throws IOException {
    Path root = repositoryRoot();
    List<String> offenders = new ArrayList<>();
    for (String module : List.of("outbox-relay", "outbox-wal")) {
      try (Stream<Path> sources = Files.walk(root.resolve(module).resolve("src/main/java"))) {
        for (Path source : sources.filter(p -> p.toString().endsWith(".java")).toList()) {
          if (Files.readString(source).contains("dev.pgoutbox.admin")) {
            offenders.add(root.relativize(source).toString());
          }
        }
      }
      if (Files.readString(root.resolve(module).resolve("pom.xml"))
          .matches("(?s).*<artifactId>pgoutbox-admin</artifactId>\\s*</dependency>.*")) {
        offenders.add(module + "/pom.xml");
      }
    }
    assertThat(offenders).as("relay sources and poms naming dev.pgoutbox.admin").isEmpty();
  }

  private static Path repositoryRoot() {
    for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
      if (Files.isRegularFile(dir.resolve("outbox-bom/pom.xml"))) {
        return dir;
      }
    }
    throw new IllegalStateException("no repository root above " + Path.of("").toAbsolutePath());
  }
}

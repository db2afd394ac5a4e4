package dev.pgoutbox.db;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import org.jooq.codegen.GenerationTool;
import org.jooq.meta.jaxb.Configuration;
import org.jooq.meta.jaxb.Property;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * "Regenerated on schema change": running the build's own code generation configuration over the
 * migrations plus a new {@code V2__*.sql} yields classes that carry the new column.
 */
class GeneratedCodeFollowsMigrationsTest {

  private static final Path MIGRATIONS = Paths.get("src/main/resources/db/pgoutbox/migration");
  private static final Path CODEGEN_XML = Paths.get("src/main/jooq/codegen.xml");

  @Test
  void aNewMigrationChangesTheGeneratedRecord(@TempDir Path work) throws Exception {
    Path scripts = Files.createDirectories(work.resolve("migration"));
    try (var files = Files.list(MIGRATIONS)) {
      for (Path file : files.toList()) {
        Files.copy(file, scripts.resolve(file.getFileName()));
      }
    }

    String before = generate(work.resolve("before"), scripts);
    assertThat(before).contains("AGGREGATE_ID").doesNotContain("TENANT_ID");

    Files.writeString(
        scripts.resolve("V2__tenant.sql"),
        "ALTER TABLE outbox_events ADD COLUMN tenant_id varchar(64);\n");
    String after = generate(work.resolve("after"), scripts);

    assertThat(after)
        .contains("public final TableField<OutboxEventsRecord, String> TENANT_ID")
        .contains("SQLDataType.VARCHAR(64)");
  }

  private static String generate(Path target, Path scripts) throws Exception {
    Configuration configuration;
    try (InputStream xml = Files.newInputStream(CODEGEN_XML)) {
      configuration = GenerationTool.load(xml);
    }
    for (Property property : configuration.getGenerator().getDatabase().getProperties()) {
      if ("scripts".equals(property.getKey())) {
        property.setValue(scripts.toAbsolutePath() + "/*.sql");
      }
    }
    configuration.getGenerator().getTarget().setDirectory(target.toString());
    GenerationTool.generate(configuration);
    return Files.readString(target.resolve("dev/pgoutbox/db/jooq/tables/OutboxEvents.java"));
  }
}

package dev.pgoutbox.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.testing.TestSchema;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The SQL the pages give an operator runs: every {@code ```sql} block of README.md and {@code
 * docs/*.md}, in page order (so a block that creates the WAL relay's publication and slot comes
 * before the one that drops them), statement by statement on a migrated schema of a server with
 * {@code wal_level=logical}. The pages' schema {@code outbox} is replaced by the test's own.
 */
class DocSqlIT {

  @RegisterExtension static final TestSchema db = TestSchema.migratedWithLogicalDecoding(2);

  @Test
  void everySqlBlockOnThePagesRuns() throws Exception {
    List<DocBlocks> blocks = DocBlocks.of("sql");
    assertThat(blocks).as("sql blocks on the pages").hasSizeGreaterThanOrEqualTo(3);
    List<String> failed = new ArrayList<>();
    try (Connection connection = db.connect();
        Statement statement = connection.createStatement()) {
      connection.setAutoCommit(true);
      for (DocBlocks block : blocks) {
        for (String sql : statements(block.text())) {
          try {
            statement.execute(sql.replace("outbox.outbox_events", db.schema() + ".outbox_events"));
          } catch (SQLException e) {
            failed.add(block + ": " + e.getMessage() + "\n  " + sql);
          }
        }
      }
    }
    assertThat(failed).as("statements of the pages that PostgreSQL refused").isEmpty();
  }

  /** The statements of a block: comments dropped, split at each {@code ;} that ends a line. */
  private static List<String> statements(String block) {
    StringBuilder code = new StringBuilder();
    for (String line : block.split("\n")) {
      if (!line.strip().startsWith("--")) {
        code.append(line).append('\n');
      }
    }
    List<String> statements = new ArrayList<>();
    for (String s : code.toString().split(";\\s*\n")) {
      if (!s.isBlank()) {
        statements.add(s.strip().replaceAll(";$", ""));
      }
    }
    return statements;
  }
}

package dev.pgoutbox.example;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.testing.TestDatabase;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** The README's main command, run in the test suite: every check of the walk-through must hold. */
class DemoCommandIT {

  @Test
  void demoPassesEveryCheckAndExitsZero() throws Exception {
    StringWriter output = new StringWriter();
    CommandLine command = new CommandLine(new Main());
    command.setOut(new PrintWriter(output, true));
    command.setErr(new PrintWriter(output, true));

    int exitCode = command.execute("demo", "--jdbc-url", TestDatabase.get().jdbcUrl());

    String text = output.toString();
    System.out.println(text);
    assertThat(exitCode).as(text).isZero();
    assertThat(text)
        .contains("PASSED: 12 of 12 checks held")
        .contains("Kafka is down")
        .contains("Kafka is up again")
        .doesNotContain("[FAILED]");
    try (Connection connection = TestDatabase.get().connect();
        Statement statement = connection.createStatement();
        ResultSet schemas =
            statement.executeQuery(
                "SELECT count(*) FROM information_schema.schemata"
                    + " WHERE schema_name LIKE 'pgoutbox_demo_%'")) {
      schemas.next();
      assertThat(schemas.getInt(1)).as("the demo drops its schema").isZero();
    }
  }
}

package dev.pgoutbox.tools.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.testing.TestSchema;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** What a failed chaos run prints of the database reads a real outbox, query by query. */
class FailureStateIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  @Test
  void everyQueryAnswersOnAMigratedOutbox(@TempDir Path logs) {
    db.execute(
        "insert into outbox_events (aggregate_type, aggregate_id, event_type, payload, attempts,"
            + " parked) values ('order', 'a', 'x', '{}', 0, false), ('order', 'b', 'x', '{}', 2,"
            + " true)");
    StringWriter printed = new StringWriter();

    FailureState.print(
        new PrintWriter(printed, true),
        db.dataSource(),
        new RelayFleet(1, List.of(), logs),
        db.schema());

    String out = printed.toString();
    assertThat(out).doesNotContain("(could not read: ");
    assertThat(out)
        .as("pending | parked | failing | first pending position")
        .containsPattern("(?m)^2 \\| 1 \\| 1 \\| \\d+$");
    assertThat(out).contains("--- relay-1.log, last 40 lines of relay state:");
  }
}

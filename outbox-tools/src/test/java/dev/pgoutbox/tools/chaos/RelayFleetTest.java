package dev.pgoutbox.tools.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RelayFleetTest {

  @Test
  void aFailedRunPrintsWhatEachRelayDidWithoutStackFramesOrPerEventFailures(@TempDir Path logs)
      throws Exception {
    Files.write(
        logs.resolve("relay-1.log"),
        List.of(
            "08:23:46.810 INFO  d.p.relay.OutboxRelay - pgoutbox-relay[relay-1] - Started WAL relay",
            "chaos-publisher-fault kind=retryable event=e1 position=36 aggregate=agg-92",
            "08:23:47.000 WARN  d.p.relay.OutboxRelay - Publish failed (attempt 1), retrying in PT1S",
            "08:23:47.100 ERROR d.p.relay.OutboxRelay - Event dead-lettered after 1 attempt(s): x",
            "relay relay-1 could not start (SQL [select pg_advisory_xact_lock(?, ?)]); trying again",
            "org.postgresql.util.PSQLException: An I/O error occurred while sending to the backend.",
            "\tat org.postgresql.core.v3.QueryExecutorImpl.execute(QueryExecutorImpl.java:474)",
            "\t... 12 more",
            "Caused by: java.net.SocketTimeoutException: Read timed out"));
    RelayFleet fleet = new RelayFleet(2, List.of(), logs);

    List<String> tails = fleet.logTails(3);

    assertThat(tails)
        .containsExactly(
            "--- relay-1.log, last 3 lines of relay state:",
            "relay relay-1 could not start (SQL [select pg_advisory_xact_lock(?, ?)]); trying again",
            "org.postgresql.util.PSQLException: An I/O error occurred while sending to the backend.",
            "Caused by: java.net.SocketTimeoutException: Read timed out",
            "--- relay-2.log, last 3 lines of relay state:",
            "(could not read "
                + logs.resolve("relay-2.log")
                + ": java.nio.file.NoSuchFileException: "
                + logs.resolve("relay-2.log")
                + ")");
  }
}

package dev.pgoutbox.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The relay's hot statements, rendered once, are exactly the SQL checked in under {@code
 * src/test/resources/dev/pgoutbox/relay/internal/sql}: a change to them (a jOOQ upgrade, a query
 * edit) fails here, so the SQL change is reviewed with the code change. On a failure the new
 * rendering is written to {@code target/rendered-sql}; review it, then copy it over the checked-in
 * file.
 */
class RenderedStatementsTest {

  record Case(String file, RenderedStatement statement, List<String> binds) {
    @Override
    public String toString() {
      return file;
    }
  }

  static List<Case> statements() {
    String schema = "public";
    List<String> strict =
        List.of("scanFrom", "heads", "lockNamespace", "perAggregate", "batchSize");
    List<String> headsOnly = List.of("scanFrom", "heads", "lockNamespace");
    List<String> failed = List.of("attempts", "reason", "historyAttempt", "historyReason", "id");
    return List.of(
        new Case("claim-strict-hold.sql", ClaimStatements.strict(schema, false), strict),
        new Case("claim-strict-release.sql", ClaimStatements.strict(schema, true), strict),
        new Case(
            "claim-strict-heads-only-hold.sql",
            ClaimStatements.strictHeadsOnly(schema, false),
            headsOnly),
        new Case(
            "claim-strict-heads-only-release.sql",
            ClaimStatements.strictHeadsOnly(schema, true),
            headsOnly),
        new Case("claim-strict-wal-hold.sql", ClaimStatements.strict(schema, false, true), strict),
        new Case(
            "claim-strict-wal-release.sql", ClaimStatements.strict(schema, true, true), strict),
        new Case(
            "claim-strict-wal-heads-only-hold.sql",
            ClaimStatements.strictHeadsOnly(schema, false, true),
            headsOnly),
        new Case(
            "claim-strict-wal-heads-only-release.sql",
            ClaimStatements.strictHeadsOnly(schema, true, true),
            headsOnly),
        new Case(
            "claim-unordered.sql",
            ClaimStatements.unordered(schema),
            List.of("scanFrom", "batchSize")),
        new Case("claim-bodies.sql", ClaimStatements.bodies(schema), List.of("ids")),
        new Case("mark-published.sql", MarkStatements.published(schema), List.of("positions")),
        new Case("mark-deleted.sql", MarkStatements.deleted(schema), List.of("positions")),
        new Case(
            "mark-retry.sql",
            MarkStatements.retry(schema),
            List.of(
                "attempts", "reason", "retryInMillis", "historyAttempt", "historyReason", "id")),
        new Case("mark-dead.sql", MarkStatements.dead(schema), failed));
  }

  @ParameterizedTest
  @MethodSource("statements")
  void renderedAsCheckedIn(Case c) throws IOException {
    String expected;
    try (InputStream in = getClass().getResourceAsStream("sql/" + c.file())) {
      expected = in == null ? "" : new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    String actual = c.statement().sql() + "\n";
    if (!actual.equals(expected)) {
      Path out = Path.of("target", "rendered-sql", c.file());
      Files.createDirectories(out.getParent());
      Files.writeString(out, actual);
    }
    assertThat(actual)
        .as("%s (new rendering in target/rendered-sql)", c.file())
        .isEqualTo(expected);
    assertThat(c.statement().binds()).isEqualTo(c.binds());
  }

  @ParameterizedTest
  @MethodSource("statements")
  void documentedBindIndexesMatchTheRenderedOrder(Case c) {
    RenderedStatement s = c.statement();
    switch (c.file()) {
      case "claim-strict-hold.sql",
          "claim-strict-release.sql",
          "claim-strict-wal-hold.sql",
          "claim-strict-wal-release.sql" -> {
        assertThat(s.index("scanFrom")).isEqualTo(ClaimStatements.STRICT_SCAN_FROM);
        assertThat(s.index("heads")).isEqualTo(ClaimStatements.STRICT_HEADS);
        assertThat(s.index("lockNamespace")).isEqualTo(ClaimStatements.STRICT_LOCK_NAMESPACE);
        assertThat(s.index("perAggregate")).isEqualTo(ClaimStatements.STRICT_PER_AGGREGATE);
        assertThat(s.index("batchSize")).isEqualTo(ClaimStatements.STRICT_BATCH_SIZE);
      }
      case "claim-strict-heads-only-hold.sql",
          "claim-strict-heads-only-release.sql",
          "claim-strict-wal-heads-only-hold.sql",
          "claim-strict-wal-heads-only-release.sql" -> {
        assertThat(s.index("scanFrom")).isEqualTo(ClaimStatements.STRICT_SCAN_FROM);
        assertThat(s.index("heads")).isEqualTo(ClaimStatements.STRICT_HEADS);
        assertThat(s.index("lockNamespace")).isEqualTo(ClaimStatements.STRICT_LOCK_NAMESPACE);
      }
      case "claim-unordered.sql" -> {
        assertThat(s.index("scanFrom")).isEqualTo(ClaimStatements.UNORDERED_SCAN_FROM);
        assertThat(s.index("batchSize")).isEqualTo(ClaimStatements.UNORDERED_BATCH_SIZE);
      }
      case "claim-bodies.sql" -> assertThat(s.index("ids")).isEqualTo(ClaimStatements.BODIES_IDS);
      case "mark-published.sql", "mark-deleted.sql" ->
          assertThat(s.index("positions")).isEqualTo(MarkStatements.PUBLISHED_POSITIONS);
      case "mark-retry.sql" -> {
        assertThat(s.index("attempts")).isEqualTo(MarkStatements.FAILED_ATTEMPTS);
        assertThat(s.index("reason")).isEqualTo(MarkStatements.FAILED_REASON);
        assertThat(s.index("retryInMillis")).isEqualTo(MarkStatements.RETRY_IN_MILLIS);
        assertThat(s.index("historyAttempt")).isEqualTo(MarkStatements.RETRY_HISTORY_ATTEMPT);
        assertThat(s.index("historyReason")).isEqualTo(MarkStatements.RETRY_HISTORY_REASON);
        assertThat(s.index("id")).isEqualTo(MarkStatements.RETRY_ID);
      }
      case "mark-dead.sql" -> {
        assertThat(s.index("attempts")).isEqualTo(MarkStatements.FAILED_ATTEMPTS);
        assertThat(s.index("reason")).isEqualTo(MarkStatements.FAILED_REASON);
        assertThat(s.index("historyAttempt")).isEqualTo(MarkStatements.DEAD_HISTORY_ATTEMPT);
        assertThat(s.index("historyReason")).isEqualTo(MarkStatements.DEAD_HISTORY_REASON);
        assertThat(s.index("id")).isEqualTo(MarkStatements.DEAD_ID);
      }
      default -> throw new AssertionError(c.file());
    }
  }
}

package dev.pgoutbox.admin;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.testing.TestSchema;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The host's pool hands out connections with auto-commit off ({@code
 * spring.datasource.hikari.auto-commit=false}): every admin write must commit on its own. Before
 * this test, admin retries, discards and retention reported success and changed nothing (retention
 * then looped for ever, deleting the same rows again).
 */
class AdminManualCommitPoolIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static HikariDataSource manualCommitPool;
  private static OutboxAdmin admin;

  @BeforeAll
  static void setUp() {
    manualCommitPool = db.newManualCommitPool(2, "manual-commit");
    admin = OutboxAdmin.builder().dataSource(manualCommitPool).schema(db.schema()).build();
  }

  @AfterAll
  static void close() {
    manualCommitPool.close();
  }

  @BeforeEach
  void empty() {
    db.execute("TRUNCATE outbox_events");
  }

  private static void kill(UUID id) {
    db.execute(
        "UPDATE outbox_events SET dead_at = now(), attempts = 10, last_error = 'boom' WHERE id = '"
            + id
            + "'");
  }

  private static long count(String where) {
    return db.queryLong("SELECT count(*) FROM outbox_events WHERE " + where);
  }

  @Test
  void adminRetriesAndDiscardsTakeEffect() {
    UUID one = EventRows.insert(db.dsl(), "a", 1);
    UUID ofAggregate = EventRows.insert(db.dsl(), "b", 1);
    UUID ofType = EventRows.insert(db.dsl(), "c", 1);
    UUID discarded = EventRows.insert(db.dsl(), "d", 1);
    for (UUID id : new UUID[] {one, ofAggregate, ofType, discarded}) {
      kill(id);
    }
    db.execute("UPDATE outbox_events SET event_type = 'only.c' WHERE id = '" + ofType + "'");

    assertThat(admin.retry(one)).isTrue();
    assertThat(admin.retryAggregate("order", "b")).isEqualTo(1);
    assertThat(admin.retryEventType("only.c")).isEqualTo(1);
    assertThat(admin.discard(discarded)).isTrue();

    assertThat(count("dead_at IS NULL AND attempts = 0")).as("retried, as reported").isEqualTo(3);
    assertThat(count("id = '" + discarded + "'")).as("discarded, as reported").isZero();
    assertThat(admin.deadLetterCount()).isZero();
  }

  @Test
  @Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD) // it used to loop for ever
  void retentionDeletesWhatItReports() {
    for (int i = 1; i <= 5; i++) {
      EventRows.insert(db.dsl(), "a", i);
    }
    db.execute("UPDATE outbox_events SET processed_at = now() - interval '2 hours'");

    assertThat(admin.purgeProcessed(Duration.ofHours(1), 2)).isEqualTo(5);
    assertThat(count("true")).isZero();
  }
}

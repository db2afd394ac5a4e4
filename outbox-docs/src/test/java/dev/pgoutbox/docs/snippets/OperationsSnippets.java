package dev.pgoutbox.docs.snippets;

import dev.pgoutbox.admin.DeadLetterQuery;
import dev.pgoutbox.admin.EventSelector;
import dev.pgoutbox.admin.OutboxAdmin;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;

/** docs/operations.md. */
final class OperationsSnippets {

  private OperationsSnippets() {}

  static void admin(DataSource dataSource, UUID eventId, List<UUID> ids) {
    // snippet:start admin
    OutboxAdmin admin = OutboxAdmin.builder().dataSource(dataSource).schema("outbox").build();
    admin.deadLetters(50, 0); // a page, oldest first; pass the last position to page on
    admin.retry(eventId); // attempts, retry_after, dead_at reset: published again,
    // then the events queued behind it, in order
    admin.retryAggregate("order", "42"); // every dead or backing-off event of one aggregate
    admin.retryEventType("order.paid"); // ... of one event type
    admin.discard(eventId); // delete a dead letter for good (releases its aggregate)
    admin.stats(); // pending, oldest pending age, dead letters, blocked aggregates,
    // oldest open transaction, table (dead rows, sizes, autovacuum)
    admin.status(); // stats, relays, WAL slots, blocked heads, and the problems
    admin.deadLetters(DeadLetterQuery.builder().eventType("order.paid").newestFirst(true).build());
    admin.event(eventId, false); // one event, any state, payload left out
    admin.retryable(EventSelector.aggregate("order", "42"), 100); // what a retry would touch
    admin.retryEvents(ids); // exactly these, those still dead or backing off
    admin.discardEvents(ids); // exactly these dead letters
    admin.checkAccess(true); // names a missing schema, table or privilege
    // snippet:end admin
  }

  static long rebuild(OutboxAdmin admin) {
    // snippet:start rebuild-indexes
    long freed = admin.rebuildPendingIndexes(); // REINDEX INDEX CONCURRENTLY, both pending indexes
    // snippet:end rebuild-indexes
    return freed;
  }
}

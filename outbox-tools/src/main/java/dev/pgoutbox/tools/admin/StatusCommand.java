package dev.pgoutbox.tools.admin;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.pgoutbox.admin.OutboxAdmin;
import dev.pgoutbox.admin.OutboxStatus;
import dev.pgoutbox.admin.RelayInstance;
import dev.pgoutbox.admin.StoredEvent;
import dev.pgoutbox.relay.OutboxStats;
import dev.pgoutbox.relay.OutboxTableStats;
import dev.pgoutbox.relay.WalSlotStats;
import java.io.PrintWriter;
import java.time.Duration;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code admin status}: the outbox at a glance; exit 0 healthy, 1 degraded, 2 unreachable. */
@Command(
    name = "status",
    mixinStandardHelpOptions = true,
    description = {
      "Pending events and the oldest one's age, dead letters, blocked aggregates with their head"
          + " event, relays and their heartbeat, WAL slots (lag, wal_status), the table's size and"
          + " dead rows, the oldest open transaction; then the problems found.",
      "Exit code: 0 healthy, 1 degraded, 2 unreachable (for cron and shell checks)."
    })
final class StatusCommand extends AdminVerb {

  @Option(
      names = "--max-pending-age",
      paramLabel = "S",
      defaultValue = "300",
      description =
          "Seconds the oldest pending event may wait before the outbox is degraded"
              + " (default: ${DEFAULT-VALUE})")
  long maxPendingAgeSeconds = 300;

  @Option(
      names = "--max-transaction-age",
      paramLabel = "S",
      defaultValue = "600",
      description =
          "Seconds a transaction may stay open (holding back vacuum of the outbox)"
              + " before the outbox is degraded (default: ${DEFAULT-VALUE})")
  long maxTransactionAgeSeconds = 600;

  @Override
  int run(OutboxAdmin admin) {
    if (maxPendingAgeSeconds < 1 || maxTransactionAgeSeconds < 1) {
      throw new AdminFailure(
          "--max-pending-age and --max-transaction-age must be at least 1, were "
              + maxPendingAgeSeconds
              + " and "
              + maxTransactionAgeSeconds);
    }
    admin.checkAccess(false);
    OutboxStatus status =
        admin.status(
            Duration.ofSeconds(maxPendingAgeSeconds), Duration.ofSeconds(maxTransactionAgeSeconds));
    if (json) {
      printJson(json(admin.schema(), status));
    } else {
      text(admin.schema(), status);
    }
    return status.healthy() ? OK : NOTHING_DONE;
  }

  @Override
  int fail(String message) {
    err().println("pgoutbox-admin: unreachable: " + message);
    if (json) {
      ObjectNode node = AdminJson.object();
      node.put("status", "unreachable");
      node.put("error", message);
      printJson(node);
    }
    return FAILED;
  }

  private ObjectNode json(String schema, OutboxStatus status) {
    OutboxStats stats = status.stats();
    ObjectNode node = AdminJson.object();
    node.put("status", status.healthy() ? "healthy" : "degraded");
    node.put("schema", schema);
    node.put("pending", stats.pending());
    node.put("oldest_pending_age_seconds", AdminJson.seconds(stats.oldestPendingAge()));
    node.put("dead_letters", stats.deadLetters());
    node.put("blocked_aggregates", stats.blockedAggregates());
    ArrayNode heads = node.putArray("blocked_heads");
    status.blockedHeads().forEach(e -> heads.add(AdminJson.event(e)));
    node.put("relays_alive", status.relaysAlive());
    ArrayNode relays = node.putArray("relays");
    status.relays().forEach(r -> relays.add(AdminJson.relay(r)));
    ArrayNode slots = node.putArray("wal_slots");
    status.walSlots().forEach(s -> slots.add(AdminJson.slot(s)));
    OutboxTableStats t = stats.table();
    ObjectNode table = node.putObject("table");
    table.put("live_tuples", t.liveTuples());
    table.put("dead_tuples", t.deadTuples());
    table.put("dead_tuple_ratio", t.deadTupleRatio());
    table.put("size_bytes", t.tableBytes());
    table.put("index_size_bytes", t.indexBytes());
    table.put("pending_index_size_bytes", t.pendingIndexBytes());
    table.put("autovacuum_count", t.autovacuumCount());
    table.put("last_autovacuum", AdminJson.time(t.lastAutovacuum()));
    node.put("oldest_transaction_age_seconds", AdminJson.seconds(stats.oldestTransactionAge()));
    ArrayNode problems = node.putArray("problems");
    status.problems().forEach(problems::add);
    return node;
  }

  private void text(String schema, OutboxStatus status) {
    PrintWriter out = out();
    OutboxStats stats = status.stats();
    out.printf(
        "outbox %s on %s: %s%n", schema, shownUrl(), status.healthy() ? "HEALTHY" : "DEGRADED");
    out.printf(
        "  pending             %d (oldest %s)%n",
        stats.pending(), AdminText.age(stats.oldestPendingAge()));
    out.printf("  dead letters        %d%n", stats.deadLetters());
    out.printf("  blocked aggregates  %d%n", stats.blockedAggregates());
    for (StoredEvent head : status.blockedHeads()) {
      out.printf(
          "    %s/%s  head %s %s  %s%n",
          head.aggregateType(),
          head.aggregateId(),
          head.id(),
          head.eventType(),
          AdminText.why(head));
    }
    out.printf(
        "  relays alive        %d of %d registered%n",
        status.relaysAlive(), status.relays().size());
    for (RelayInstance relay : status.relays()) {
      out.printf(
          "    %s  %s  instance %s  last heartbeat %s ago%s%n",
          relay.relayName(),
          relay.source() == null ? "(source unknown)" : relay.source(),
          relay.instanceId(),
          AdminText.age(relay.heartbeatAge()),
          relay.alive() ? "" : "  EXPIRED");
    }
    if (status.walSlots().isEmpty()) {
      out.println("  WAL slots           none");
    }
    for (WalSlotStats slot : status.walSlots()) {
      out.printf(
          "  WAL slot            %s  %s  lag %d bytes, %s  wal_status %s%n",
          slot.slotName(),
          slot.active() ? "streaming" : "NO READER",
          slot.lagBytes(),
          AdminText.age(slot.lagTime()),
          slot.walStatus());
    }
    OutboxTableStats t = stats.table();
    out.printf(
        "  table               %d live, %d dead rows (%.1f%%), %s, indexes %s (pending %s),"
            + " last autovacuum %s%n",
        t.liveTuples(),
        t.deadTuples(),
        t.deadTupleRatio() * 100,
        AdminText.bytes(t.tableBytes()),
        AdminText.bytes(t.indexBytes()),
        AdminText.bytes(t.pendingIndexBytes()),
        t.lastAutovacuum() == null ? "never" : t.lastAutovacuum().toString());
    out.printf("  oldest transaction  %s%n", AdminText.age(stats.oldestTransactionAge()));
    if (!status.healthy()) {
      out.println("problems:");
      status.problems().forEach(p -> out.println("  - " + p));
    }
    out.flush();
  }
}

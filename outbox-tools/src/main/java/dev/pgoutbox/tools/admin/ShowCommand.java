package dev.pgoutbox.tools.admin;

import dev.pgoutbox.admin.OutboxAdmin;
import dev.pgoutbox.admin.StoredEvent;
import java.io.PrintWriter;
import java.util.Optional;
import java.util.UUID;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code admin show ID}: one event, its payload only with {@code --payload}. */
@Command(
    name = "show",
    mixinStandardHelpOptions = true,
    description = {
      "Shows one event: type, aggregate, state, headers, attempts, every recorded error with its"
          + " attempt and time, and its times. The payload only with --payload (it may hold"
          + " personal data).",
      "The outbox keeps the last ten failed attempts; earlier ones are in the relay's log"
          + " (event_id=...). Exit code 1 if no event has this id."
    })
final class ShowCommand extends AdminVerb {

  @Parameters(index = "0", paramLabel = "ID", description = "The event's id (a UUID)")
  UUID id;

  @Option(names = "--payload", description = "Print the payload too")
  boolean payload;

  @Override
  int run(OutboxAdmin admin) {
    admin.checkAccess(false);
    Optional<StoredEvent> found = admin.event(id, payload);
    if (found.isEmpty()) {
      String message =
          "no event "
              + id
              + " in schema "
              + admin.schema()
              + " (never written here, discarded, or purged after publishing)";
      err().println("pgoutbox-admin: " + message);
      if (json) {
        var node = AdminJson.object();
        node.put("error", message);
        node.put("exit_code", NOTHING_DONE);
        printJson(node);
      }
      return NOTHING_DONE;
    }
    StoredEvent e = found.get();
    if (json) {
      printJson(AdminJson.event(e));
      return OK;
    }
    PrintWriter out = out();
    out.printf("event        %s (position %d)%n", e.id(), e.position());
    out.printf("type         %s%n", e.eventType());
    out.printf("aggregate    %s/%s%n", e.aggregateType(), e.aggregateId());
    out.printf("state        %s%n", AdminText.why(e));
    out.printf("attempts     %d%n", e.attempts());
    out.printf("last error   %s%n", e.lastError() == null ? "(none)" : e.lastError());
    for (StoredEvent.FailedAttempt f : e.failures()) {
      out.printf(
          "  attempt %-3d %s%s  %s%n", f.attempt(), f.at(), f.dead() ? " (dead)" : "", f.error());
    }
    if (e.deadAt() != null) {
      out.printf("dead at      %s%n", e.deadAt());
    }
    if (e.retryAfter() != null) {
      out.printf("retry after  %s%n", e.retryAfter());
    }
    out.printf("created at   %s%n", e.createdAt());
    if (e.processedAt() != null) {
      out.printf("published at %s%n", e.processedAt());
    }
    if (e.parked()) {
      out.println("parked       yes (left by the WAL relay to the table drainer)");
    }
    out.printf("headers      %s%n", e.headers());
    out.printf(
        "payload      %s%n", e.payload() != null ? e.payload() : "(hidden; --payload shows it)");
    out.flush();
    return OK;
  }
}

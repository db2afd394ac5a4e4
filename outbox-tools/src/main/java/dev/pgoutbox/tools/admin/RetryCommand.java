package dev.pgoutbox.tools.admin;

import dev.pgoutbox.admin.EventSelector;
import dev.pgoutbox.admin.OutboxAdmin;
import dev.pgoutbox.admin.StoredEvent;
import java.util.List;
import java.util.UUID;
import picocli.CommandLine.Command;

/** {@code admin retry}: make dead or backing-off events due now, attempts reset. */
@Command(
    name = "retry",
    mixinStandardHelpOptions = true,
    description = {
      "Makes dead or backing-off events due at once, their attempts reset: by id, by aggregate or"
          + " by type. Prints the events first; asks before more than one (--yes for scripts);"
          + " --dry-run only prints.",
      "A dead letter under the hold policy goes out next, then the events behind it, in order."
    })
final class RetryCommand extends SelectionVerb {

  @Override
  String verb() {
    return "retry";
  }

  @Override
  String done() {
    return "retried";
  }

  @Override
  String eligible() {
    return "dead or backing-off events";
  }

  @Override
  List<StoredEvent> candidates(OutboxAdmin admin, EventSelector selector) {
    return admin.retryable(selector, OutboxAdmin.MAX_SELECTION);
  }

  @Override
  int act(OutboxAdmin admin, List<UUID> ids) {
    return admin.retryEvents(ids);
  }
}

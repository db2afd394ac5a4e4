package dev.pgoutbox.tools.admin;

import dev.pgoutbox.admin.EventSelector;
import dev.pgoutbox.admin.OutboxAdmin;
import dev.pgoutbox.admin.StoredEvent;
import java.util.List;
import java.util.UUID;
import picocli.CommandLine.Command;

/** {@code admin discard}: delete dead letters for good. */
@Command(
    name = "discard",
    mixinStandardHelpOptions = true,
    description = {
      "Deletes dead letters for good: by id, by aggregate or by type. Prints them first; asks"
          + " before more than one (--yes for scripts); --dry-run only prints.",
      "Under the hold policy this releases the events queued behind them."
    })
final class DiscardCommand extends SelectionVerb {

  @Override
  String verb() {
    return "discard";
  }

  @Override
  String done() {
    return "discarded";
  }

  @Override
  String eligible() {
    return "dead letters";
  }

  @Override
  List<StoredEvent> candidates(OutboxAdmin admin, EventSelector selector) {
    return admin.discardable(selector, OutboxAdmin.MAX_SELECTION);
  }

  @Override
  int act(OutboxAdmin admin, List<UUID> ids) {
    return admin.discardEvents(ids);
  }
}

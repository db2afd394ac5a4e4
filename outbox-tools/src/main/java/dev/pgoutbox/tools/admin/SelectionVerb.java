package dev.pgoutbox.tools.admin;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.pgoutbox.admin.EventSelector;
import dev.pgoutbox.admin.OutboxAdmin;
import dev.pgoutbox.admin.StoredEvent;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.UUID;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code retry} and {@code discard}: select events by id, aggregate or type, print what the action
 * will touch (the admin's own preview, so it shows exactly the rule the action applies), ask before
 * touching more than one, then act on exactly the events printed.
 */
abstract class SelectionVerb extends AdminVerb {

  private static final Logger LOG = LoggerFactory.getLogger("pgoutbox-admin");

  @Parameters(
      index = "0",
      arity = "0..1",
      paramLabel = "ID",
      description = "One event, by id (a UUID)")
  @Nullable UUID id;

  @Option(
      names = "--aggregate",
      paramLabel = "TYPE/ID",
      description = "Every such event of one aggregate, as its type, a slash and its id (order/42)")
  @Nullable String aggregate;

  @Option(
      names = "--type",
      paramLabel = "EVENT_TYPE",
      description = "Every such event of one event type")
  @Nullable String eventType;

  @Option(names = "--yes", description = "Do not ask before touching more than one event")
  boolean yes;

  @Option(names = "--dry-run", description = "Only print what would be touched")
  boolean dryRun;

  /** "retry" or "discard". */
  abstract String verb();

  /** "retried" or "discarded". */
  abstract String done();

  /** What the events must be for this verb, for the message when none is. */
  abstract String eligible();

  abstract List<StoredEvent> candidates(OutboxAdmin admin, EventSelector selector);

  abstract int act(OutboxAdmin admin, List<UUID> ids);

  @Override
  final int run(OutboxAdmin admin) {
    EventSelector selector = selector();
    admin.checkAccess(!dryRun);
    List<StoredEvent> events = candidates(admin, selector);
    if (events.size() >= OutboxAdmin.MAX_SELECTION) {
      throw new AdminFailure(
          selector
              + " selects "
              + OutboxAdmin.MAX_SELECTION
              + " events or more; the admin touches at most "
              + OutboxAdmin.MAX_SELECTION
              + " at a time: narrow the selection (one aggregate, or retry in steps)");
    }
    ObjectNode report = AdminJson.object();
    report.put("action", verb());
    report.put("selector", selector.toString());
    report.put("dry_run", dryRun);
    report.put("matched", events.size());
    ArrayNode listed = report.putArray("events");
    events.forEach(e -> listed.add(AdminJson.event(e)));
    PrintWriter out = out();
    if (events.isEmpty()) {
      return nothingToDo(admin, selector, report);
    }
    if (!json) {
      out.printf(
          "%s %d event%s (%s):%n",
          dryRun ? "Would " + verb() : "Will " + verb(),
          events.size(),
          events.size() == 1 ? "" : "s",
          selector);
      AdminText.preview(out, events);
      out.flush();
    }
    if (dryRun) {
      report.put(done(), 0);
      if (json) {
        printJson(report);
      } else {
        out.println("Dry run: nothing " + done() + ".");
        out.flush();
      }
      return OK;
    }
    if (events.size() > 1 && !yes && !confirmed(events.size())) {
      report.put(done(), 0);
      report.put("confirmed", false);
      if (json) {
        printJson(report);
      } else {
        out.println("Not confirmed: nothing " + done() + ".");
        out.flush();
      }
      return NOTHING_DONE;
    }
    List<UUID> ids = events.stream().map(StoredEvent::id).toList();
    int touched = act(admin, ids);
    LOG.info(
        "{} {} of {} events ({}) in schema {} as OS user {} on {}",
        done(),
        touched,
        ids.size(),
        selector,
        admin.schema(),
        System.getProperty("user.name"),
        shownUrl());
    report.put(done(), touched);
    if (json) {
      printJson(report);
    } else {
      out.printf(
          "%s %d event%s.%s%n",
          capitalized(done()),
          touched,
          touched == 1 ? "" : "s",
          touched < ids.size()
              ? " " + (ids.size() - touched) + " changed meanwhile and were left alone."
              : "");
      out.flush();
    }
    return OK;
  }

  private int nothingToDo(OutboxAdmin admin, EventSelector selector, ObjectNode report) {
    String message;
    int code;
    if (id != null) {
      Optional<StoredEvent> event = admin.event(id, false);
      code = NOTHING_DONE;
      message =
          event.isEmpty()
              ? "no event " + id + " in schema " + admin.schema() + ": nothing to " + verb()
              : "event "
                  + id
                  + " is "
                  + event.get().state()
                  + ": only "
                  + eligible()
                  + " can be "
                  + done();
    } else {
      code = OK;
      message = "no " + eligible() + " for " + selector + ": nothing to " + verb();
    }
    report.put(done(), 0);
    report.put("message", message);
    if (json) {
      printJson(report);
    } else {
      (code == OK ? out() : err()).println((code == OK ? "" : "pgoutbox-admin: ") + message);
      out().flush();
      err().flush();
    }
    return code;
  }

  private boolean confirmed(int count) {
    PrintWriter err = err();
    err.printf("%s these %d events? Type 'yes' to go on: ", capitalized(verb()), count);
    err.flush();
    try {
      String answer = parent.input.readLine();
      return answer != null
          && (answer.trim().equalsIgnoreCase("yes") || answer.trim().equalsIgnoreCase("y"));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private EventSelector selector() {
    int ways = (id != null ? 1 : 0) + (aggregate != null ? 1 : 0) + (eventType != null ? 1 : 0);
    if (ways != 1) {
      throw new AdminFailure(
          verb()
              + " needs exactly one of ID, --aggregate TYPE/ID or --type EVENT_TYPE, was given "
              + ways);
    }
    if (id != null) {
      return EventSelector.id(id);
    }
    if (eventType != null) {
      return EventSelector.eventType(eventType);
    }
    String[] parts = aggregate(aggregate);
    return EventSelector.aggregate(parts[0], parts[1]);
  }

  /** {@code TYPE/ID} split at its first slash (ids may hold slashes, types do not). */
  static String[] aggregate(String value) {
    int slash = value.indexOf('/');
    if (slash <= 0 || slash == value.length() - 1) {
      throw new AdminFailure(
          "--aggregate must be TYPE/ID, the aggregate's type, a slash and its id (order/42), was '"
              + value
              + "'");
    }
    return new String[] {value.substring(0, slash), value.substring(slash + 1)};
  }

  private static String capitalized(String word) {
    return word.substring(0, 1).toUpperCase(Locale.ROOT) + word.substring(1);
  }
}

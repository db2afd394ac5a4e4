package dev.pgoutbox.console;

import static dev.pgoutbox.console.ConsoleAnswers.JSON;
import static dev.pgoutbox.console.ConsoleAnswers.body;
import static dev.pgoutbox.console.ConsoleAnswers.error;
import static dev.pgoutbox.console.ConsoleAnswers.json;
import static dev.pgoutbox.console.ConsoleAnswers.text;
import static dev.pgoutbox.console.ConsoleAnswers.uuid;
import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.pgoutbox.admin.EventSelector;
import dev.pgoutbox.admin.OutboxAdmin;
import dev.pgoutbox.admin.StoredEvent;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The console's writes: a preview, a retry or a discard of a selection, refused unless writes are
 * on, the host lets the caller write, and the request is same-origin; each logged with the caller.
 */
final class ConsoleWrites {

  private static final Logger LOG = LoggerFactory.getLogger(OutboxConsole.class);
  private static final int PREVIEW_EVENTS = 20;

  private final OutboxAdmin admin;
  private final boolean writesEnabled;
  private final EventJson eventJson;

  ConsoleWrites(OutboxAdmin admin, boolean writesEnabled, EventJson events) {
    this.admin = admin;
    this.writesEnabled = writesEnabled;
    this.eventJson = events;
  }

  ConsoleResponse post(ConsoleRequest request, String action) {
    String crossSite = crossSiteRefusal(request);
    if (crossSite != null) {
      return refuse(request, action, "cross-site", crossSite);
    }
    JsonNode body = body(request);
    String verb = action.equals("preview") ? text(body, "action") : action;
    if (!"retry".equals(verb) && !"discard".equals(verb)) {
      throw new BadRequest(
          400, "bad-request", "action must be 'retry' or 'discard', was '" + verb + "'");
    }
    Selection selection = selection(body);
    if (!action.equals("preview")) {
      if (!writesEnabled) {
        return refuse(request, action, "read-only", readOnlyMessage(action));
      }
      if (request.writeRefusal() != null) {
        return refuse(request, action, "not-allowed", request.writeRefusal());
      }
    }
    List<StoredEvent> events = candidates(verb, selection);
    ObjectNode answer = JSON.createObjectNode();
    answer.put("action", verb);
    answer.put("selection", selection.toString());
    answer.put("matched", events.size());
    if (action.equals("preview")) {
      ArrayNode listed = answer.putArray("events");
      events.stream().limit(PREVIEW_EVENTS).forEach(e -> listed.add(eventJson.event(e)));
      return json(answer);
    }
    JsonNode expected = body.get("expected");
    if (expected != null && !expected.isNull() && expected.asLong(-1) != events.size()) {
      return refuse(
          request,
          action,
          "changed",
          "the selection changed since it was confirmed: "
              + events.size()
              + " event(s) now, "
              + expected.asText()
              + " confirmed; preview it again");
    }
    List<UUID> ids = events.stream().map(StoredEvent::id).toList();
    int changed = verb.equals("retry") ? admin.retryEvents(ids) : admin.discardEvents(ids);
    (verb.equals("retry") ? LOG.atInfo() : LOG.atWarn())
        .addKeyValue("action", verb)
        .addKeyValue("principal", request.caller())
        .addKeyValue("selection", selection.toString())
        .addKeyValue("rows", changed)
        .log(
            "pgoutbox-console[{}] - {} by {}: {} of {} event(s) ({})",
            admin.schema(),
            verb.equals("retry") ? "Retry" : "Discard",
            request.caller(),
            changed,
            ids.size(),
            selection);
    answer.put("changed", changed);
    return json(answer);
  }

  /** Why a POST is refused as cross-site; null when it is same-origin. */
  private static @Nullable String crossSiteRefusal(ConsoleRequest request) {
    String contentType = request.header("Content-Type");
    if (contentType == null
        || !contentType.toLowerCase(java.util.Locale.ROOT).startsWith("application/json")) {
      return "a write must send Content-Type application/json, was " + contentType;
    }
    if (request.header(OutboxConsole.WRITE_HEADER) == null) {
      return "a write must carry the header "
          + OutboxConsole.WRITE_HEADER
          + " (the console's page sends it)";
    }
    String fetchSite = request.header("Sec-Fetch-Site");
    if (fetchSite != null && !fetchSite.equals("same-origin") && !fetchSite.equals("none")) {
      return "a write must come from the console's own page, Sec-Fetch-Site was " + fetchSite;
    }
    String origin = request.header("Origin");
    String host = request.header("Host");
    if (origin != null) {
      String originHost = origin.replaceFirst("^https?://", "");
      if (host == null || origin.equals(originHost) || !originHost.equalsIgnoreCase(host)) {
        return "a write must come from the console's own origin, Origin was "
            + origin
            + " for Host "
            + host;
      }
    }
    return null;
  }

  private ConsoleResponse refuse(
      ConsoleRequest request, String action, String code, @Nullable String why) {
    String message = why == null ? "refused" : why;
    LOG.atWarn()
        .addKeyValue("action", action)
        .addKeyValue("principal", request.caller())
        .addKeyValue("refusal", code)
        .log(
            "pgoutbox-console[{}] - Refused {} by {}: {}",
            admin.schema(),
            action,
            request.caller(),
            message);
    return error(code.equals("changed") ? 409 : 403, code, message);
  }

  static String readOnlyMessage(String action) {
    return "the console is read-only: "
        + action
        + " is refused until writes are enabled (pgoutbox.console.writes-enabled,"
        + " admin serve --writes)";
  }

  private List<StoredEvent> candidates(String verb, Selection selection) {
    boolean retry = verb.equals("retry");
    if (selection.ids() != null) {
      List<StoredEvent> events = new ArrayList<>();
      for (UUID id : selection.ids()) {
        EventSelector one = EventSelector.id(id);
        events.addAll(retry ? admin.retryable(one, 1) : admin.discardable(one, 1));
      }
      return events;
    }
    EventSelector selector = requireNonNull(selection.selector());
    List<StoredEvent> events =
        retry
            ? admin.retryable(selector, OutboxAdmin.MAX_SELECTION)
            : admin.discardable(selector, OutboxAdmin.MAX_SELECTION);
    if (events.size() >= OutboxAdmin.MAX_SELECTION) {
      throw new BadRequest(
          400,
          "too-many",
          selector
              + " selects "
              + OutboxAdmin.MAX_SELECTION
              + " events or more; the console touches at most "
              + OutboxAdmin.MAX_SELECTION
              + " at a time: narrow the selection");
    }
    return events;
  }

  /** Events by ids, or by an {@link EventSelector} (aggregate or type). */
  private record Selection(@Nullable List<UUID> ids, @Nullable EventSelector selector) {
    @Override
    public String toString() {
      return ids != null ? ids.size() + " selected event(s) " + ids : String.valueOf(selector);
    }
  }

  private static Selection selection(JsonNode body) {
    JsonNode ids = body.get("ids");
    String aggregateType = text(body, "aggregate_type");
    String aggregateId = text(body, "aggregate_id");
    String eventType = text(body, "event_type");
    int ways =
        (ids != null && !ids.isNull() ? 1 : 0)
            + (aggregateType != null || aggregateId != null ? 1 : 0)
            + (eventType != null ? 1 : 0);
    if (ways != 1) {
      throw new BadRequest(
          400,
          "bad-request",
          "a selection names exactly one of ids, aggregate_type with aggregate_id, or event_type;"
              + " was given "
              + ways);
    }
    if (ids != null && !ids.isNull()) {
      if (!ids.isArray() || ids.isEmpty() || ids.size() > OutboxConsole.MAX_IDS) {
        throw new BadRequest(
            400,
            "bad-request",
            "ids must be an array of 1 to "
                + OutboxConsole.MAX_IDS
                + " event ids, was "
                + ids.size());
      }
      List<UUID> list = new ArrayList<>();
      for (JsonNode id : ids) {
        list.add(uuid(id.asText(), "ids"));
      }
      return new Selection(List.copyOf(new java.util.LinkedHashSet<>(list)), null);
    }
    if (eventType != null) {
      return new Selection(null, EventSelector.eventType(eventType));
    }
    if (aggregateType == null || aggregateId == null) {
      throw new BadRequest(
          400, "bad-request", "aggregate_type and aggregate_id go together: give both");
    }
    return new Selection(null, EventSelector.aggregate(aggregateType, aggregateId));
  }
}

package dev.pgoutbox.console;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.relay.DeadLetterQuery;
import dev.pgoutbox.relay.EventSelector;
import dev.pgoutbox.relay.OutboxAdmin;
import dev.pgoutbox.relay.OutboxStats;
import dev.pgoutbox.relay.OutboxStatus;
import dev.pgoutbox.relay.RelayInstance;
import dev.pgoutbox.relay.StoredEvent;
import dev.pgoutbox.relay.WalSlotStats;
import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The web console: the page and its JSON API over {@link OutboxAdmin}, independent of any web
 * framework. A host maps a path (the Spring Boot starter: {@code /pgoutbox}; {@code admin serve}:
 * {@code /}) to {@link #handle}, passing who asks and whether it lets them write.
 *
 * <pre>{@code
 * OutboxConsole console = OutboxConsole.builder(admin).writesEnabled(true).build();
 * ConsoleResponse response = console.handle(request);
 * }</pre>
 *
 * <p>The API (paths below the mount point):
 *
 * <ul>
 *   <li>{@code GET api/session}: the schema and what this caller may do;
 *   <li>{@code GET api/overview}: {@link OutboxAdmin#status()}, the publish rate and the samples of
 *       the last hour;
 *   <li>{@code GET
 *       api/dead-letters?type=&aggregate_type=&aggregate_id=&since=&error=&order=&limit=&after=}: a
 *       page of {@link OutboxAdmin#deadLetters(DeadLetterQuery)};
 *   <li>{@code GET api/events/{id}}: one event ({@link OutboxAdmin#event});
 *   <li>{@code GET api/blocked}: the heads of blocked aggregates and why each waits;
 *   <li>{@code GET api/relays}: the relay fleet and the WAL slots;
 *   <li>{@code POST api/preview}, {@code api/retry}, {@code api/discard} with a JSON selection
 *       ({@code {"action":"retry","ids":[...]}}, {@code {"aggregate_type":..,"aggregate_id":..}} or
 *       {@code {"event_type":..}}, and {@code "expected"}, the count the operator confirmed): what
 *       {@link OutboxAdmin#retryable} / {@link OutboxAdmin#discardable} list, then {@link
 *       OutboxAdmin#retryEvents} / {@link OutboxAdmin#discardEvents} on exactly those.
 * </ul>
 *
 * <p>Security: every write is refused unless {@link Builder#writesEnabled}; unless the host lets
 * the caller write ({@link ConsoleRequest#writeRefusal()} null); and unless it is same-origin: a
 * JSON body, the header {@value #WRITE_HEADER}, an {@code Origin} (when sent) equal to the {@code
 * Host}, and {@code Sec-Fetch-Site} (when sent) {@code same-origin}. Every write and every refusal
 * is logged with the caller, the selection and the count. Payloads are left out unless {@link
 * Builder#showPayloads}. Every answer carries a Content-Security-Policy that runs only the
 * console's own scripts. Thread-safe.
 */
public final class OutboxConsole {

  /** The header every write must carry (a cross-site form cannot set it): {@value}. */
  public static final String WRITE_HEADER = "X-Pgoutbox-Console";

  /** Page size of the dead-letter list when the request names none: {@value}. */
  public static final int DEFAULT_PAGE = 50;

  /** Most events a selection by ids may name, and most a preview lists: {@value}. */
  public static final int MAX_IDS = OutboxAdmin.MAX_PAGE;

  /** Largest request body a write or preview may send: {@value} bytes. */
  public static final int MAX_BODY_BYTES = 64 * 1024;

  /** The Content-Security-Policy of every answer: {@value}. */
  public static final String CONTENT_SECURITY_POLICY =
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
          + " connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

  private static final Logger LOG = LoggerFactory.getLogger(OutboxConsole.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int PREVIEW_EVENTS = 20;
  private static final int BLOCKED_LIMIT = 200;
  private static final Duration RATE_WINDOW = Duration.ofMinutes(1);

  private final OutboxAdmin admin;
  private final boolean writesEnabled;
  private final boolean showPayloads;
  private final boolean tokenPrompt;
  private final Clock clock;
  private final StaticAssets assets = new StaticAssets();
  private final ConsoleHistory history = new ConsoleHistory();

  private OutboxConsole(Builder b) {
    this.admin = b.admin;
    this.writesEnabled = b.writesEnabled;
    this.showPayloads = b.showPayloads;
    this.tokenPrompt = b.tokenPrompt;
    this.clock = b.clock;
  }

  /** A builder of a console on {@code admin}: read-only, payloads hidden. */
  public static Builder builder(OutboxAdmin admin) {
    return new Builder(admin);
  }

  /** Whether writes are enabled at all. */
  public boolean writesEnabled() {
    return writesEnabled;
  }

  /** Whether events are shown with their payloads. */
  public boolean showsPayloads() {
    return showPayloads;
  }

  /**
   * Answers one request: a file of the page, or the API. Never throws for a bad request or a
   * database failure: those are answers (400, 404, 503) with a JSON {@code error}.
   */
  public ConsoleResponse handle(ConsoleRequest request) {
    requireNonNull(request, "request must not be null");
    String path = request.path();
    try {
      if (path.startsWith("api/")) {
        return api(request, path.substring(4));
      }
      if (!request.method().equals("GET") && !request.method().equals("HEAD")) {
        return error(405, "method-not-allowed", request.method() + " is not allowed on the page");
      }
      StaticAssets.Asset asset = assets.get(path);
      if (asset == null) {
        return error(404, "not-found", "no such file: " + path);
      }
      return response(200, asset.contentType(), asset.bytes());
    } catch (BadRequest e) {
      return error(e.status, e.code, e.getMessage());
    } catch (IllegalArgumentException e) {
      return error(400, "bad-request", String.valueOf(e.getMessage()));
    } catch (OutboxException e) {
      LOG.warn("pgoutbox-console[{}] - {} failed: {}", admin.schema(), request, e.getMessage());
      return error(503, "database", String.valueOf(e.getMessage()));
    }
  }

  /**
   * Takes a sample for the chart of the last hour, unless one was taken in the last 10 s. The
   * overview takes one on each request; a host may also call this on a schedule so that the chart
   * has no gaps while no page is open.
   */
  public void sample() {
    sample(admin.stats());
  }

  private void sample(OutboxStats stats) {
    Instant now = clock.instant();
    if (!history.due(now)) {
      return;
    }
    double rate = admin.publishedWithin(RATE_WINDOW) / (double) RATE_WINDOW.toSeconds();
    history.add(
        new ConsoleHistory.Sample(
            now,
            stats.pending(),
            stats.deadLetters(),
            stats.blockedAggregates(),
            stats.oldestPendingAge().toMillis(),
            rate));
  }

  private ConsoleResponse api(ConsoleRequest request, String route) {
    String method = request.method();
    if (method.equals("GET")) {
      return switch (route) {
        case "session" -> json(session(request));
        case "overview" -> json(overview());
        case "dead-letters" -> json(deadLetters(request));
        case "blocked" -> json(blocked());
        case "relays" -> json(relays());
        default -> {
          if (route.startsWith("events/")) {
            yield event(route.substring("events/".length()));
          }
          throw new BadRequest(404, "not-found", "no such API: " + route);
        }
      };
    }
    if (method.equals("POST")) {
      String action =
          switch (route) {
            case "preview" -> "preview";
            case "retry" -> "retry";
            case "discard" -> "discard";
            default -> throw new BadRequest(404, "not-found", "no such API: POST " + route);
          };
      return post(request, action);
    }
    return error(405, "method-not-allowed", method + " is not allowed on api/" + route);
  }

  // --- reads ----------------------------------------------------------------------------------

  private ObjectNode session(ConsoleRequest request) {
    ObjectNode session = JSON.createObjectNode();
    session.put("schema", admin.schema());
    session.put("caller", request.caller());
    session.put("writes_enabled", writesEnabled);
    session.put("show_payloads", showPayloads);
    session.put("can_write", writesEnabled && request.writeRefusal() == null);
    session.put(
        "write_refusal", !writesEnabled ? readOnlyMessage("writes") : request.writeRefusal());
    session.put("token_prompt", tokenPrompt && writesEnabled);
    return session;
  }

  private ObjectNode overview() {
    OutboxStatus status = admin.status();
    OutboxStats stats = status.stats();
    sample(stats);
    ObjectNode overview = JSON.createObjectNode();
    overview.put("time", clock.instant().toString());
    overview.put("healthy", status.healthy());
    ArrayNode problems = overview.putArray("problems");
    status.problems().forEach(problems::add);
    overview.put("pending", stats.pending());
    overview.put("oldest_pending_age_ms", stats.oldestPendingAge().toMillis());
    overview.put("dead_letters", stats.deadLetters());
    overview.put("blocked_aggregates", stats.blockedAggregates());
    overview.put("oldest_transaction_age_ms", stats.oldestTransactionAge().toMillis());
    overview.put("relays_alive", status.relaysAlive());
    overview.put("relays", status.relays().size());
    List<ConsoleHistory.Sample> samples = history.samples();
    overview.put(
        "published_per_second", samples.isEmpty() ? 0 : samples.getLast().publishedPerSecond());
    ArrayNode chart = overview.putArray("history");
    for (ConsoleHistory.Sample s : samples) {
      ObjectNode point = chart.addObject();
      point.put("t", s.at().toEpochMilli());
      point.put("pending", s.pending());
      point.put("dead_letters", s.deadLetters());
      point.put("blocked", s.blocked());
      point.put("lag_ms", s.lagMillis());
      point.put("published_per_second", s.publishedPerSecond());
    }
    return overview;
  }

  private ObjectNode deadLetters(ConsoleRequest request) {
    DeadLetterQuery.Builder query = DeadLetterQuery.builder();
    String type = request.param("type");
    if (type != null) {
      query.eventType(type);
    }
    String aggregateType = request.param("aggregate_type");
    String aggregateId = request.param("aggregate_id");
    if (aggregateType != null || aggregateId != null) {
      if (aggregateType == null || aggregateId == null) {
        throw new BadRequest(
            400, "bad-request", "aggregate_type and aggregate_id go together: give both or none");
      }
      query.aggregate(aggregateType, aggregateId);
    }
    String since = request.param("since");
    if (since != null) {
      try {
        query.since(Instant.parse(since));
      } catch (DateTimeParseException e) {
        throw new BadRequest(
            400,
            "bad-request",
            "since must be an ISO-8601 instant (2026-12-07T03:00:00Z), was '" + since + "'");
      }
    }
    String error = request.param("error");
    if (error != null) {
      query.errorContains(error);
    }
    String order = request.param("order");
    if (order != null && !order.equals("newest") && !order.equals("oldest")) {
      throw new BadRequest(
          400, "bad-request", "order must be 'newest' or 'oldest', was '" + order + "'");
    }
    query.newestFirst(!"oldest".equals(order));
    int limit = (int) number(request, "limit", DEFAULT_PAGE, 1, OutboxAdmin.MAX_PAGE);
    query.limit(limit);
    query.after(number(request, "after", 0, 0, Long.MAX_VALUE));
    List<StoredEvent> page = admin.deadLetters(query.build());
    ObjectNode answer = JSON.createObjectNode();
    ArrayNode items = answer.putArray("items");
    page.forEach(e -> items.add(event(e)));
    answer.put("limit", limit);
    if (page.size() == limit) {
      answer.put("next", page.getLast().position());
    } else {
      answer.putNull("next");
    }
    return answer;
  }

  private ConsoleResponse event(String id) {
    UUID eventId = uuid(id, "id");
    StoredEvent event =
        admin
            .event(eventId, showPayloads)
            .orElseThrow(
                () ->
                    new BadRequest(
                        404,
                        "not-found",
                        "no event "
                            + eventId
                            + " in schema "
                            + admin.schema()
                            + " (never written, discarded or purged)"));
    return json(event(event, true));
  }

  private ObjectNode blocked() {
    ObjectNode answer = JSON.createObjectNode();
    ArrayNode items = answer.putArray("items");
    for (StoredEvent head : admin.blockedAggregateHeads(BLOCKED_LIMIT)) {
      ObjectNode item = event(head);
      item.put("reason", waitReason(head));
      items.add(item);
    }
    answer.put("limit", BLOCKED_LIMIT);
    return answer;
  }

  /** Why the head of a blocked aggregate waits, from the fields the admin read. */
  private static String waitReason(StoredEvent head) {
    String why =
        head.deadAt() != null
            ? "dead since " + head.deadAt() + ": waits for a retry or a discard"
            : "backing off until "
                + head.retryAfter()
                + " after "
                + head.attempts()
                + " attempt(s)";
    return head.parked() ? why + "; parked by the WAL relay for the table drainer" : why;
  }

  private ObjectNode relays() {
    OutboxStatus status = admin.status();
    ObjectNode answer = JSON.createObjectNode();
    ArrayNode relays = answer.putArray("relays");
    for (RelayInstance r : status.relays()) {
      ObjectNode relay = relays.addObject();
      relay.put("instance_id", r.instanceId().toString());
      relay.put("relay_name", r.relayName());
      relay.put("source", r.source() == null ? "TABLE" : r.source());
      relay.put("wal_slot", r.walSlot());
      relay.put("ordering", r.ordering());
      relay.put("dead_letter_policy", r.deadLetterPolicy());
      relay.put("started_at", r.startedAt().toString());
      relay.put("heartbeat_at", r.heartbeatAt().toString());
      relay.put("heartbeat_age_ms", r.heartbeatAge().toMillis());
      relay.put("alive", r.alive());
    }
    ArrayNode slots = answer.putArray("wal_slots");
    for (WalSlotStats s : status.walSlots()) {
      ObjectNode slot = slots.addObject();
      slot.put("slot_name", s.slotName());
      slot.put("active", s.active());
      slot.put("lag_bytes", s.lagBytes());
      slot.put("lag_time_ms", s.lagTime().toMillis());
      slot.put("wal_status", s.walStatus());
      slot.put("lost", s.lost());
    }
    return answer;
  }

  // --- writes ---------------------------------------------------------------------------------

  private ConsoleResponse post(ConsoleRequest request, String action) {
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
      events.stream().limit(PREVIEW_EVENTS).forEach(e -> listed.add(event(e)));
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
    if (request.header(WRITE_HEADER) == null) {
      return "a write must carry the header " + WRITE_HEADER + " (the console's page sends it)";
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

  private static String readOnlyMessage(String action) {
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
      if (!ids.isArray() || ids.isEmpty() || ids.size() > MAX_IDS) {
        throw new BadRequest(
            400,
            "bad-request",
            "ids must be an array of 1 to " + MAX_IDS + " event ids, was " + ids.size());
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

  private static JsonNode body(ConsoleRequest request) {
    if (request.body().length > MAX_BODY_BYTES) {
      throw new BadRequest(
          413,
          "too-large",
          "the body must be at most " + MAX_BODY_BYTES + " bytes, was " + request.body().length);
    }
    try {
      JsonNode body = JSON.readTree(request.body());
      if (body == null || !body.isObject()) {
        throw new BadRequest(400, "bad-request", "the body must be a JSON object");
      }
      return body;
    } catch (JsonProcessingException e) {
      throw new BadRequest(400, "bad-request", "the body is not JSON: " + e.getOriginalMessage());
    } catch (IOException e) {
      throw new BadRequest(400, "bad-request", "the body could not be read: " + e.getMessage());
    }
  }

  // --- JSON -----------------------------------------------------------------------------------

  private ObjectNode event(StoredEvent e) {
    return event(e, false);
  }

  /** An event as JSON; {@code detail}: with its headers, as one event's page shows them. */
  private ObjectNode event(StoredEvent e, boolean detail) {
    ObjectNode event = JSON.createObjectNode();
    event.put("id", e.id().toString());
    event.put("position", e.position());
    event.put("aggregate_type", e.aggregateType());
    event.put("aggregate_id", e.aggregateId());
    event.put("event_type", e.eventType());
    event.put("state", e.state());
    event.put("attempts", e.attempts());
    event.put("last_error", e.lastError());
    event.put("created_at", e.createdAt().toString());
    event.put("retry_after", text(e.retryAfter()));
    event.put("dead_at", text(e.deadAt()));
    event.put("processed_at", text(e.processedAt()));
    event.put("parked", e.parked());
    if (detail) {
      ArrayNode errors = event.putArray("errors");
      for (StoredEvent.FailedAttempt f : e.failures()) {
        errors
            .addObject()
            .put("attempt", f.attempt())
            .put("at", f.at().toString())
            .put("error", f.error())
            .put("dead", f.dead());
      }
      // Headers may carry credentials: their values only where payloads are shown, else the names.
      if (showPayloads) {
        event.put("headers", e.headers());
      } else {
        ArrayNode names = event.putArray("header_names");
        try {
          JSON.readTree(e.headers()).fieldNames().forEachRemaining(names::add);
        } catch (JsonProcessingException malformed) {
          names.add("(unreadable)");
        }
      }
    }
    if (showPayloads && e.payload() != null) {
      event.put("payload", e.payload());
    }
    event.put("payload_hidden", !showPayloads);
    return event;
  }

  private static @Nullable String text(@Nullable Instant instant) {
    return instant == null ? null : instant.toString();
  }

  private static @Nullable String text(JsonNode body, String field) {
    JsonNode value = body.get(field);
    if (value == null || value.isNull()) {
      return null;
    }
    if (!value.isTextual() || value.asText().isEmpty()) {
      throw new BadRequest(400, "bad-request", field + " must be a non-empty string");
    }
    return value.asText();
  }

  private static long number(
      ConsoleRequest request, String name, long fallback, long min, long max) {
    String value = request.param(name);
    if (value == null) {
      return fallback;
    }
    try {
      long n = Long.parseLong(value);
      if (n < min || n > max) {
        throw new NumberFormatException();
      }
      return n;
    } catch (NumberFormatException e) {
      throw new BadRequest(
          400,
          "bad-request",
          name
              + " must be a whole number between "
              + min
              + " and "
              + max
              + ", was '"
              + value
              + "'");
    }
  }

  private static UUID uuid(String text, String field) {
    try {
      return UUID.fromString(text);
    } catch (IllegalArgumentException e) {
      throw new BadRequest(
          400, "bad-request", field + " must hold event ids (UUIDs), was '" + text + "'");
    }
  }

  private static ConsoleResponse json(JsonNode document) {
    try {
      return response(200, "application/json", JSON.writeValueAsBytes(document));
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  private static ConsoleResponse error(int status, String code, String message) {
    ObjectNode error = JSON.createObjectNode();
    error.put("status", status);
    error.put("code", code);
    error.put("error", message);
    try {
      return response(status, "application/json", JSON.writeValueAsBytes(error));
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  private static ConsoleResponse response(int status, String contentType, byte[] body) {
    Map<String, String> headers = new LinkedHashMap<>();
    headers.put("Content-Type", contentType);
    headers.put("Content-Security-Policy", CONTENT_SECURITY_POLICY);
    headers.put("X-Content-Type-Options", "nosniff");
    headers.put("X-Frame-Options", "DENY");
    headers.put("Referrer-Policy", "no-referrer");
    headers.put("Cache-Control", "no-store");
    return new ConsoleResponse(status, headers, body);
  }

  /** A request the console answers with an error status instead of data. */
  private static final class BadRequest extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final int status;
    private final String code;

    BadRequest(int status, String code, String message) {
      super(message, null, false, false);
      this.status = status;
      this.code = code;
    }
  }

  @Override
  public String toString() {
    return "OutboxConsole[schema="
        + admin.schema()
        + ", writesEnabled="
        + writesEnabled
        + ", showPayloads="
        + showPayloads
        + "]";
  }

  /** Builds an {@link OutboxConsole}; not thread-safe. */
  public static final class Builder {
    private final OutboxAdmin admin;
    private boolean writesEnabled;
    private boolean showPayloads;
    private boolean tokenPrompt;
    private Clock clock = Clock.systemUTC();

    private Builder(OutboxAdmin admin) {
      this.admin = requireNonNull(admin, "admin must not be null");
    }

    /** Whether retry and discard run at all (default false: read-only). */
    public Builder writesEnabled(boolean writesEnabled) {
      this.writesEnabled = writesEnabled;
      return this;
    }

    /**
     * Whether events are shown with their payloads (default false: they may hold personal data).
     */
    public Builder showPayloads(boolean showPayloads) {
      this.showPayloads = showPayloads;
      return this;
    }

    /**
     * Whether the page offers a field for a write token (the host checks it, {@code admin serve}
     * does; default false).
     */
    public Builder tokenPrompt(boolean tokenPrompt) {
      this.tokenPrompt = tokenPrompt;
      return this;
    }

    /** The clock of the samples (default the system's, UTC). */
    public Builder clock(Clock clock) {
      this.clock = requireNonNull(clock, "clock must not be null");
      return this;
    }

    /** The console. */
    public OutboxConsole build() {
      return new OutboxConsole(this);
    }
  }
}

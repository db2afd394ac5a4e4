package dev.pgoutbox.console;

import static dev.pgoutbox.console.ConsoleAnswers.JSON;
import static dev.pgoutbox.console.ConsoleAnswers.error;
import static dev.pgoutbox.console.ConsoleAnswers.json;
import static dev.pgoutbox.console.ConsoleAnswers.number;
import static dev.pgoutbox.console.ConsoleAnswers.response;
import static dev.pgoutbox.console.ConsoleAnswers.uuid;
import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.pgoutbox.admin.DeadLetterQuery;
import dev.pgoutbox.admin.OutboxAdmin;
import dev.pgoutbox.admin.OutboxStatus;
import dev.pgoutbox.admin.RelayInstance;
import dev.pgoutbox.admin.StoredEvent;
import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.relay.OutboxStats;
import dev.pgoutbox.relay.WalSlotStats;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.UUID;
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
  private static final int BLOCKED_LIMIT = 200;
  private static final Duration RATE_WINDOW = Duration.ofMinutes(1);

  private final OutboxAdmin admin;
  private final boolean writesEnabled;
  private final boolean showPayloads;
  private final boolean tokenPrompt;
  private final Clock clock;
  private final EventJson events;
  private final ConsoleWrites writes;
  private final StaticAssets assets = new StaticAssets();
  private final ConsoleHistory history = new ConsoleHistory();

  private OutboxConsole(Builder b) {
    this.admin = b.admin;
    this.writesEnabled = b.writesEnabled;
    this.showPayloads = b.showPayloads;
    this.tokenPrompt = b.tokenPrompt;
    this.clock = b.clock;
    this.events = new EventJson(showPayloads);
    this.writes = new ConsoleWrites(admin, writesEnabled, events);
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
      return writes.post(request, action);
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
        "write_refusal",
        !writesEnabled ? ConsoleWrites.readOnlyMessage("writes") : request.writeRefusal());
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
    page.forEach(e -> items.add(events.event(e)));
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
    return json(events.event(event, true));
  }

  private ObjectNode blocked() {
    ObjectNode answer = JSON.createObjectNode();
    ArrayNode items = answer.putArray("items");
    for (StoredEvent head : admin.blockedAggregateHeads(BLOCKED_LIMIT)) {
      ObjectNode item = events.event(head);
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

package dev.pgoutbox.console;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgoutbox.admin.OutboxAdmin;
import dev.pgoutbox.testing.TestSchema;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The console's API on a real PostgreSQL, without a browser: what it refuses (read-only,
 * cross-site, the host's refusal, a selection that changed since it was confirmed), what a write
 * touches, what it hides, and the errors that name the parameter.
 */
class OutboxConsoleIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String HOST = "127.0.0.1:8080";

  private OutboxAdmin admin;

  @BeforeEach
  void emptyTable() {
    db.execute("truncate outbox_events");
    admin = OutboxAdmin.builder().dataSource(db.dataSource()).schema(db.schema()).build();
  }

  @Test
  void aReadOnlyConsoleRefusesRetryAndDiscardButPreviewsThem() throws Exception {
    OutboxConsole console = OutboxConsole.builder(admin).build();
    UUID dead = deadLetter("order", "1", "OrderPlaced");
    String body = "{\"ids\":[\"" + dead + "\"]}";

    for (String action : List.of("retry", "discard")) {
      ConsoleResponse answer = console.handle(post(action, body, sameOrigin(), null));
      assertThat(answer.status()).isEqualTo(403);
      assertThat(json(answer).get("code").asText()).isEqualTo("read-only");
      assertThat(answer.text()).contains("pgoutbox.console.writes-enabled");
    }
    ConsoleResponse preview =
        console.handle(
            post(
                "preview",
                "{\"action\":\"retry\",\"ids\":[\"" + dead + "\"]}",
                sameOrigin(),
                null));
    assertThat(json(preview).get("matched").asInt()).isEqualTo(1);
    assertThat(stillDead(dead)).isTrue();
  }

  @Test
  void crossSiteWritesAreRefusedWhateverTheHostAllows() throws Exception {
    OutboxConsole console = OutboxConsole.builder(admin).writesEnabled(true).build();
    UUID dead = deadLetter("order", "1", "OrderPlaced");
    String body = "{\"ids\":[\"" + dead + "\"]}";
    List<Map<String, String>> attempts =
        List.of(
            headers("Content-Type", "text/plain", OutboxConsole.WRITE_HEADER, "1", "Host", HOST),
            headers("Content-Type", "application/json", "Host", HOST),
            jsonWrite("Origin", "http://evil.test"),
            jsonWrite("Origin", "null"),
            jsonWrite("Sec-Fetch-Site", "cross-site"));
    for (Map<String, String> headers : attempts) {
      ConsoleResponse answer = console.handle(post("discard", body, headers, null));
      assertThat(answer.status()).as(headers.toString()).isEqualTo(403);
      assertThat(json(answer).get("code").asText()).isEqualTo("cross-site");
    }
    assertThat(stillDead(dead)).isTrue();
  }

  @Test
  void theHostsRefusalOfTheCallerIsHonouredAndNamed() throws Exception {
    OutboxConsole console = OutboxConsole.builder(admin).writesEnabled(true).build();
    UUID dead = deadLetter("order", "1", "OrderPlaced");

    ConsoleResponse answer =
        console.handle(
            post("retry", "{\"ids\":[\"" + dead + "\"]}", sameOrigin(), "user bob lacks role X"));

    assertThat(answer.status()).isEqualTo(403);
    assertThat(json(answer).get("error").asText()).isEqualTo("user bob lacks role X");
    JsonNode session = json(console.handle(get("api/session", "user bob lacks role X")));
    assertThat(session.get("writes_enabled").asBoolean()).isTrue();
    assertThat(session.get("can_write").asBoolean()).isFalse();
    assertThat(stillDead(dead)).isTrue();
  }

  @Test
  void aWriteTouchesExactlyWhatThePreviewCountedAndRefusesASelectionThatChanged() throws Exception {
    OutboxConsole console = OutboxConsole.builder(admin).writesEnabled(true).build();
    UUID first = deadLetter("order", "42", "OrderPlaced");
    UUID second = deadLetter("order", "42", "OrderShipped");
    UUID other = deadLetter("order", "43", "OrderPlaced");
    String aggregate = "\"aggregate_type\":\"order\",\"aggregate_id\":\"42\"";

    JsonNode preview =
        json(console.handle(post("preview", "{\"action\":\"retry\"," + aggregate + "}")));
    assertThat(preview.get("matched").asInt()).isEqualTo(2);
    assertThat(preview.get("selection").asText()).isEqualTo("aggregate order/42");

    ConsoleResponse changed = console.handle(post("retry", "{\"expected\":3," + aggregate + "}"));
    assertThat(changed.status()).isEqualTo(409);
    assertThat(json(changed).get("error").asText()).contains("2 event(s) now, 3 confirmed");
    assertThat(stillDead(first)).isTrue();

    JsonNode done = json(console.handle(post("retry", "{\"expected\":2," + aggregate + "}")));
    assertThat(done.get("changed").asInt()).isEqualTo(2);
    assertThat(stillDead(first)).isFalse();
    assertThat(stillDead(second)).isFalse();
    assertThat(stillDead(other)).isTrue();

    JsonNode discarded = json(console.handle(post("discard", "{\"event_type\":\"OrderPlaced\"}")));
    assertThat(discarded.get("changed").asInt()).as("the retried one is no dead letter").isOne();
    assertThat(db.queryLong("select count(*) from outbox_events where id = '" + other + "'"))
        .isZero();
  }

  @Test
  void deadLettersAreFilteredAndPagedNewestFirst() throws Exception {
    OutboxConsole console = OutboxConsole.builder(admin).build();
    UUID a1 = deadLetter("order", "1", "A");
    deadLetter("order", "2", "B");
    UUID a2 = deadLetter("order", "3", "A");
    UUID a3 = deadLetter("order", "4", "A");
    db.execute(
        "update outbox_events set last_error = 'Timeout talking to broker' where id = '"
            + a2
            + "'");

    JsonNode first = json(console.handle(query("api/dead-letters", "type=A&limit=2")));
    assertThat(ids(first)).containsExactly(a3.toString(), a2.toString());
    long next = first.get("next").asLong();
    JsonNode second =
        json(console.handle(query("api/dead-letters", "type=A&limit=2&after=" + next)));
    assertThat(ids(second)).containsExactly(a1.toString());
    assertThat(second.get("next").isNull()).isTrue();

    JsonNode oldest =
        json(console.handle(query("api/dead-letters", "type=A&order=oldest&limit=1")));
    assertThat(ids(oldest)).containsExactly(a1.toString());
    JsonNode byError = json(console.handle(query("api/dead-letters", "error=timeout")));
    assertThat(ids(byError)).containsExactly(a2.toString());
    JsonNode byAggregate =
        json(console.handle(query("api/dead-letters", "aggregate_type=order&aggregate_id=4")));
    assertThat(ids(byAggregate)).containsExactly(a3.toString());
    JsonNode future = json(console.handle(query("api/dead-letters", "since=2999-01-01T00:00:00Z")));
    assertThat(ids(future)).isEmpty();
  }

  private static List<String> ids(JsonNode page) {
    List<String> ids = new java.util.ArrayList<>();
    page.get("items").forEach(item -> ids.add(item.get("id").asText()));
    return ids;
  }

  private static ConsoleRequest query(String path, String query) {
    return new ConsoleRequest(
        "GET", path, ConsoleRequest.parseQuery(query), Map.of(), new byte[0], "tester", null);
  }

  @Test
  void payloadsAndHeaderValuesAreHiddenUnlessShown() throws Exception {
    UUID dead = deadLetter("order", "1", "OrderPlaced");

    JsonNode hidden =
        json(OutboxConsole.builder(admin).build().handle(get("api/events/" + dead, null)));
    assertThat(hidden.has("payload")).isFalse();
    assertThat(hidden.has("headers")).isFalse();
    assertThat(hidden.get("payload_hidden").asBoolean()).isTrue();
    assertThat(hidden.get("header_names").toString()).contains("authorization");
    assertThat(hidden.toString()).doesNotContain("card-4242").doesNotContain("Bearer");
    JsonNode listed =
        json(OutboxConsole.builder(admin).build().handle(get("api/dead-letters", null)));
    assertThat(listed.toString()).doesNotContain("card-4242").doesNotContain("Bearer");

    JsonNode shown =
        json(
            OutboxConsole.builder(admin)
                .showPayloads(true)
                .build()
                .handle(get("api/events/" + dead, null)));
    assertThat(shown.get("payload").asText()).contains("card-4242");
    assertThat(shown.get("headers").asText()).contains("Bearer");
  }

  @Test
  void oneEventShowsEveryRecordedErrorWithItsAttemptAndTime() throws Exception {
    UUID dead = deadLetter("order", "2", "OrderPlaced");
    db.execute(
        "update outbox_events set error_history = '[{\"attempt\": 9, \"at\":"
            + " \"2026-12-07T10:00:00+00:00\", \"error\": \"timeout\", \"dead\": false},"
            + " {\"attempt\": 10, \"at\": \"2026-12-07T10:05:00+00:00\", \"error\":"
            + " \"refused\", \"dead\": true}]' where id = '"
            + dead
            + "'");

    JsonNode event =
        json(OutboxConsole.builder(admin).build().handle(get("api/events/" + dead, null)));

    assertThat(event.get("errors")).hasSize(2);
    assertThat(event.get("errors").get(0).get("attempt").asInt()).isEqualTo(9);
    assertThat(event.get("errors").get(0).get("error").asText()).isEqualTo("timeout");
    assertThat(event.get("errors").get(1).get("dead").asBoolean()).isTrue();
    assertThat(event.get("errors").get(1).get("at").asText()).isEqualTo("2026-12-07T10:05:00Z");
  }

  @Test
  void badParametersAreRefusedWithTheParameterNamed() throws Exception {
    OutboxConsole console = OutboxConsole.builder(admin).writesEnabled(true).build();
    Map<String, String> cases = new HashMap<>();
    cases.put("api/dead-letters?limit=0", "limit must be a whole number between 1 and 1000");
    cases.put("api/dead-letters?since=yesterday", "since must be an ISO-8601 instant");
    cases.put("api/dead-letters?order=sideways", "order must be 'newest' or 'oldest'");
    cases.put("api/dead-letters?aggregate_type=order", "aggregate_type and aggregate_id");
    cases.put("api/events/not-a-uuid", "id must hold event ids");
    for (Map.Entry<String, String> c : cases.entrySet()) {
      String[] parts = c.getKey().split("\\?", 2);
      ConsoleResponse answer =
          console.handle(
              new ConsoleRequest(
                  "GET",
                  parts[0],
                  ConsoleRequest.parseQuery(parts.length > 1 ? parts[1] : null),
                  Map.of(),
                  new byte[0],
                  "tester",
                  null));
      assertThat(answer.status()).as(c.getKey()).isEqualTo(400);
      assertThat(json(answer).get("error").asText()).as(c.getKey()).contains(c.getValue());
    }
    assertThat(console.handle(get("api/events/" + UUID.randomUUID(), null)).status())
        .isEqualTo(404);
    ConsoleResponse twoWays =
        console.handle(
            post("retry", "{\"event_type\":\"A\",\"ids\":[\"" + UUID.randomUUID() + "\"]}"));
    assertThat(json(twoWays).get("error").asText()).contains("exactly one of ids");
  }

  @Test
  void thePageAndEveryAnswerCarryAPolicyThatRunsOnlyTheConsolesOwnScripts() {
    OutboxConsole console = OutboxConsole.builder(admin).build();
    ConsoleResponse page = console.handle(get("", null));
    assertThat(page.status()).isEqualTo(200);
    assertThat(page.text()).contains("<script type=\"module\" src=\"console.js\">");
    assertThat(page.text()).doesNotContain("http://").doesNotContain("https://");
    assertThat(page.headers().get("Content-Security-Policy")).contains("script-src 'self'");
    for (String file : List.of("console.js", "views.js", "dom.js", "console.css")) {
      ConsoleResponse asset = console.handle(get(file, null));
      assertThat(asset.status()).isEqualTo(200);
      assertThat(asset.text())
          .doesNotContain(".innerHTML")
          .doesNotContain("insertAdjacentHTML")
          .doesNotContain("https://");
    }
    assertThat(console.handle(get("../pom.xml", null)).status()).isEqualTo(404);
    ConsoleResponse overview = console.handle(get("api/overview", null));
    assertThat(overview.headers().get("Content-Security-Policy"))
        .contains("frame-ancestors 'none'");
    assertThat(overview.headers().get("Content-Type")).isEqualTo("application/json");
  }

  @Test
  void theOverviewCountsAndKeepsASampleForTheChart() throws Exception {
    deadLetter("order", "1", "OrderPlaced");
    db.execute(
        "insert into outbox_events (aggregate_type, aggregate_id, event_type, payload,"
            + " processed_at) values ('order', '2', 'OrderPlaced', '{}', now())");
    OutboxConsole console = OutboxConsole.builder(admin).build();

    JsonNode overview = json(console.handle(get("api/overview", null)));

    assertThat(overview.get("dead_letters").asLong()).isOne();
    assertThat(overview.get("blocked_aggregates").asLong()).isOne();
    assertThat(overview.get("healthy").asBoolean()).isFalse();
    assertThat(overview.get("history")).hasSize(1);
    assertThat(overview.at("/history/0/dead_letters").asLong()).isOne();
    assertThat(overview.get("published_per_second").asDouble()).isEqualTo(1 / 60.0);
  }

  private static boolean stillDead(UUID id) {
    return db.queryLong(
            "select count(*) from outbox_events where id = '" + id + "' and dead_at is not null")
        == 1;
  }

  private static UUID deadLetter(String aggregateType, String aggregateId, String eventType) {
    UUID id = UUID.randomUUID();
    db.execute(
        ("insert into outbox_events (id, aggregate_type, aggregate_id, event_type, payload,"
                + " headers, attempts, last_error, dead_at) values ('%s', '%s', '%s', '%s',"
                + " '{\"card\": \"card-4242\"}', '{\"authorization\": \"Bearer abc\"}', 10,"
                + " 'refused', clock_timestamp())")
            .formatted(id, aggregateType, aggregateId, eventType));
    return id;
  }

  private static Map<String, String> headers(String... pairs) {
    Map<String, String> headers = new HashMap<>();
    for (int i = 0; i < pairs.length; i += 2) {
      headers.put(pairs[i], pairs[i + 1]);
    }
    return headers;
  }

  private static Map<String, String> sameOrigin() {
    return jsonWrite("Origin", "http://" + HOST, "Sec-Fetch-Site", "same-origin");
  }

  /** A JSON write's headers (content type, write header, host) and then {@code more} pairs. */
  private static Map<String, String> jsonWrite(String... more) {
    Map<String, String> headers =
        headers("Content-Type", "application/json", OutboxConsole.WRITE_HEADER, "1", "Host", HOST);
    headers.putAll(headers(more));
    return headers;
  }

  private static ConsoleRequest post(String action, String body) {
    return post(action, body, sameOrigin(), null);
  }

  private static ConsoleRequest post(
      String action, String body, Map<String, String> headers, @Nullable String refusal) {
    return new ConsoleRequest(
        "POST",
        "api/" + action,
        Map.of(),
        headers,
        body.getBytes(StandardCharsets.UTF_8),
        "tester",
        refusal);
  }

  private static ConsoleRequest get(String path, @Nullable String refusal) {
    return new ConsoleRequest("GET", path, Map.of(), Map.of(), new byte[0], "tester", refusal);
  }

  private static JsonNode json(ConsoleResponse response) throws Exception {
    return JSON.readTree(response.body());
  }
}

package dev.pgoutbox.tools.admin;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgoutbox.db.OutboxRoles;
import dev.pgoutbox.testing.TestSchema;
import dev.pgoutbox.tools.Main;
import java.io.BufferedReader;
import java.io.PrintWriter;
import java.io.StringReader;
import java.io.StringWriter;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import picocli.CommandLine;

/**
 * The {@code admin} command line, run in-process against a real PostgreSQL with dead letters,
 * backing-off and pending events planted by hand: exit codes, text, JSON parsed back, what retry
 * and discard touch (and what they must not), and the errors an operator meets at 3 a.m.
 */
class AdminCommandIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated(4);

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String PASSWORD = "s3cret-admin-pw";

  private static String bareRole;
  private static String readerRole;
  private static String relayRole;

  private StringWriter out = new StringWriter();
  private StringWriter err = new StringWriter();

  @BeforeAll
  static void createRoles() {
    bareRole = db.schema() + "_bare";
    readerRole = db.schema() + "_reader";
    relayRole = db.schema() + "_relay";
    for (String role : List.of(bareRole, readerRole, relayRole)) {
      db.execute("CREATE ROLE " + role + " LOGIN PASSWORD '" + PASSWORD + "'");
    }
    db.execute("GRANT USAGE ON SCHEMA " + db.schema() + " TO " + readerRole);
    db.execute(
        "GRANT SELECT ON "
            + db.schema()
            + ".outbox_events, "
            + db.schema()
            + ".outbox_dead_letters, "
            + db.schema()
            + ".outbox_relays TO "
            + readerRole);
    // The relay role exactly as the shipped grants make it: what the admin documents it needs.
    String writer = db.schema() + "_w";
    String consumer = db.schema() + "_c";
    db.execute("CREATE ROLE " + writer);
    db.execute("CREATE ROLE " + consumer);
    OutboxRoles.grant(db.dataSource(), db.schema(), writer, relayRole, consumer);
  }

  @AfterAll
  static void dropRoles() {
    for (String role :
        List.of(bareRole, readerRole, relayRole, db.schema() + "_w", db.schema() + "_c")) {
      db.execute("DROP OWNED BY " + role);
      db.execute("DROP ROLE " + role);
    }
  }

  @BeforeEach
  void emptyTables() {
    db.execute("TRUNCATE outbox_events, outbox_relays");
  }

  // --- status ------------------------------------------------------------------------------

  @Test
  void statusOfAnOutboxWithALiveRelayAndNothingStuckIsHealthyAndExitsZero() throws Exception {
    liveRelay("orders");
    pending("order", "1", "OrderPlaced");

    int exit = run("admin", "status", "--max-transaction-age", "86400");
    assertThat(exit).as(err.toString()).isZero();
    assertThat(out.toString()).contains("HEALTHY").contains("orders").contains("pending");

    reset();
    assertThat(run("admin", "status", "--json", "--max-transaction-age", "86400")).isZero();
    JsonNode status = JSON.readTree(out.toString());
    assertThat(status.get("status").asText()).isEqualTo("healthy");
    assertThat(status.get("pending").asLong()).isEqualTo(1);
    assertThat(status.get("relays_alive").asLong()).isEqualTo(1);
    assertThat(status.get("relays").get(0).get("relay_name").asText()).isEqualTo("orders");
    assertThat(status.get("problems")).isEmpty();
    assertThat(status.get("table").has("dead_tuples")).isTrue();
    assertThat(status.has("oldest_transaction_age_seconds")).isTrue();
  }

  @Test
  void aDeadLetterMakesTheStatusDegradedAndNamesTheBlockedAggregatesHead() throws Exception {
    liveRelay("orders");
    UUID dead = deadLetter("order", "42", "OrderPlaced", "broker said 500");
    pending("order", "42", "OrderShipped");

    assertThat(run("admin", "status", "--json", "--max-transaction-age", "86400")).isEqualTo(1);

    JsonNode status = JSON.readTree(out.toString());
    assertThat(status.get("status").asText()).isEqualTo("degraded");
    assertThat(status.get("dead_letters").asLong()).isEqualTo(1);
    assertThat(status.get("blocked_aggregates").asLong()).isEqualTo(1);
    assertThat(status.get("blocked_heads").get(0).get("id").asText()).isEqualTo(dead.toString());
    assertThat(status.get("problems").toString()).contains("1 dead letter");
  }

  @Test
  void noLiveRelayAndAnExpiredHeartbeatAreProblems() throws Exception {
    db.execute(
        "insert into outbox_relays (instance_id, relay_name, ordering, dead_letter_policy,"
            + " heartbeat_at, source) values (gen_random_uuid(), 'crashed', 'STRICT',"
            + " 'HOLD_AGGREGATE', now() - interval '5 minutes', 'TABLE')");

    assertThat(run("admin", "status", "--max-transaction-age", "86400")).isEqualTo(1);

    assertThat(out.toString())
        .contains("DEGRADED")
        .contains("EXPIRED")
        .contains("no relay is alive")
        .contains("relay 'crashed'");
  }

  @Test
  void anUnreachableDatabaseExitsTwoWithThePasswordMasked() throws Exception {
    int closedPort;
    try (ServerSocket socket = new ServerSocket(0)) {
      closedPort = socket.getLocalPort();
    }
    String url =
        "jdbc:postgresql://127.0.0.1:"
            + closedPort
            + "/test?user=postgres&password="
            + PASSWORD
            + "&connectTimeout=2";

    assertThat(run("admin", "status", "--json", "--jdbc-url", url)).isEqualTo(2);

    JsonNode answer = JSON.readTree(out.toString());
    assertThat(answer.get("status").asText()).isEqualTo("unreachable");
    assertThat(answer.get("error").asText()).contains("cannot connect to").contains("***");
    assertThat(out.toString() + err).doesNotContain(PASSWORD);
  }

  // --- dead-letters ------------------------------------------------------------------------

  @Test
  void deadLettersAsJsonIsAnArrayWithTheFieldsScriptsRead() throws Exception {
    UUID first = deadLetter("order", "1", "OrderPlaced", "timeout after 30 s");
    UUID second = deadLetter("payment", "7", "PaymentTaken", "HTTP 410 Gone");
    pending("order", "2", "OrderPlaced");

    assertThat(run("admin", "dead-letters", "--json")).isZero();

    JsonNode array = JSON.readTree(out.toString());
    assertThat(array.isArray()).isTrue();
    assertThat(ids(array)).containsExactly(second.toString(), first.toString()); // newest first
    for (JsonNode item : array) {
      assertThat(item.fieldNames())
          .toIterable()
          .contains(
              "id",
              "aggregate_type",
              "aggregate_id",
              "event_type",
              "attempts",
              "dead_at",
              "last_error");
      assertThat(item.has("payload")).as("payloads stay hidden in listings").isFalse();
    }
    JsonNode payment = array.get(0);
    assertThat(payment.get("aggregate_type").asText()).isEqualTo("payment");
    assertThat(payment.get("aggregate_id").asText()).isEqualTo("7");
    assertThat(payment.get("event_type").asText()).isEqualTo("PaymentTaken");
    assertThat(payment.get("attempts").asInt()).isEqualTo(10);
    assertThat(payment.get("last_error").asText()).isEqualTo("HTTP 410 Gone");
    assertThat(payment.get("dead_at").asText()).isNotEmpty();
  }

  @Test
  void deadLettersFilterByTypeAggregateErrorAndAge() throws Exception {
    UUID timeout = deadLetter("order", "1", "OrderPlaced", "Timeout after 30 s");
    UUID gone = deadLetter("order", "2", "OrderPlaced", "HTTP 410 Gone: 100% sure");
    UUID payment = deadLetter("payment", "1", "PaymentTaken", "timeout");
    UUID old = deadLetter("order", "1", "OrderShipped", "timeout");
    db.execute(
        "update outbox_events set dead_at = now() - interval '2 days' where id = '" + old + "'");

    assertThat(listIds("--type", "OrderPlaced")).containsExactlyInAnyOrder(timeout, gone);
    assertThat(listIds("--aggregate", "order/1")).containsExactlyInAnyOrder(timeout, old);
    assertThat(listIds("--error-contains", "TIMEOUT"))
        .containsExactlyInAnyOrder(timeout, payment, old);
    // % is a plain character, not a wildcard: only the one error with "0% s" in it.
    assertThat(listIds("--error-contains", "0% s")).containsExactly(gone);
    assertThat(listIds("--since", "1h")).containsExactlyInAnyOrder(timeout, gone, payment);
    assertThat(listIds("--aggregate", "order/1", "--error-contains", "timeout", "--since", "1d"))
        .containsExactly(timeout);
  }

  @Test
  void deadLettersPageOnWithTheCursorInBothOrders() throws Exception {
    List<UUID> planted = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      planted.add(deadLetter("order", "a" + i, "OrderPlaced", "e" + i));
    }

    List<UUID> oldestFirst = new ArrayList<>();
    long after = 0;
    for (int page = 0; page < 3; page++) {
      reset();
      assertThat(
              run(
                  "admin",
                  "dead-letters",
                  "--json",
                  "--order",
                  "oldest",
                  "--limit",
                  "2",
                  "--after",
                  Long.toString(after)))
          .isZero();
      JsonNode array = JSON.readTree(out.toString());
      array.forEach(n -> oldestFirst.add(UUID.fromString(n.get("id").asText())));
      if (!array.isEmpty()) {
        after = array.get(array.size() - 1).get("position").asLong();
      }
    }
    assertThat(oldestFirst).containsExactlyElementsOf(planted);

    reset();
    assertThat(run("admin", "dead-letters", "--limit", "2")).isZero();
    assertThat(out.toString()).contains(planted.get(4).toString()).contains("next page: --after");
    String cursor = out.toString().replaceAll("(?s).*next page: --after (\\d+).*", "$1");
    reset();
    assertThat(run("admin", "dead-letters", "--json", "--limit", "2", "--after", cursor)).isZero();
    assertThat(ids(JSON.readTree(out.toString())))
        .containsExactly(planted.get(2).toString(), planted.get(1).toString());
  }

  @Test
  void deadLettersRefuseBadOptionsNamingThem() {
    assertThat(run("admin", "dead-letters", "--limit", "5000")).isEqualTo(2);
    assertThat(err.toString()).contains("limit must be between 1 and 1000, was 5000");
    reset();
    assertThat(run("admin", "dead-letters", "--since", "yesterday")).isEqualTo(2);
    assertThat(err.toString()).contains("--since must be an instant").contains("'yesterday'");
    reset();
    assertThat(run("admin", "dead-letters", "--aggregate", "order42")).isEqualTo(2);
    assertThat(err.toString()).contains("--aggregate must be TYPE/ID");
    reset();
    assertThat(run("admin", "dead-letters", "--order", "sideways")).isEqualTo(2);
    assertThat(err.toString()).contains("--order must be newest or oldest, was 'sideways'");
  }

  // --- show --------------------------------------------------------------------------------

  @Test
  void showPrintsHeadersAndTheLastErrorAndThePayloadOnlyWhenAsked() throws Exception {
    UUID id = deadLetter("order", "9", "OrderPlaced", "HTTP 500 from the receiver");

    assertThat(run("admin", "show", id.toString())).isZero();
    assertThat(out.toString())
        .contains("OrderPlaced")
        .contains("order/9")
        .contains("HTTP 500 from the receiver")
        .contains("traceparent")
        .contains("dead at")
        .doesNotContain("card-4242")
        .contains("hidden");

    reset();
    assertThat(run("admin", "show", id.toString(), "--json")).isZero();
    JsonNode hidden = JSON.readTree(out.toString());
    assertThat(hidden.has("payload")).isFalse();
    assertThat(hidden.get("headers").get("traceparent").asText()).startsWith("00-");
    assertThat(hidden.get("state").asText()).isEqualTo("dead");

    reset();
    assertThat(run("admin", "show", id.toString(), "--json", "--payload")).isZero();
    assertThat(JSON.readTree(out.toString()).get("payload").get("card").asText())
        .isEqualTo("card-4242");
  }

  @Test
  void showListsEveryRecordedErrorWithItsAttemptAndTime() throws Exception {
    UUID id = deadLetter("order", "11", "OrderPlaced", "HTTP 410 gone");
    db.execute(
        "update outbox_events set error_history = '[{\"attempt\": 1, \"at\":"
            + " \"2026-12-07T10:00:00.5+00:00\", \"error\": \"connection refused\", \"dead\":"
            + " false}, {\"attempt\": 2, \"at\": \"2026-12-07T10:00:04+00:00\", \"error\":"
            + " \"HTTP 410 gone\", \"dead\": true}]' where id = '"
            + id
            + "'");

    assertThat(run("admin", "show", id.toString())).isZero();
    assertThat(out.toString())
        .contains("attempt 1   2026-12-07T10:00:00.500Z  connection refused")
        .contains("attempt 2   2026-12-07T10:00:04Z (dead)  HTTP 410 gone");

    reset();
    assertThat(run("admin", "show", id.toString(), "--json")).isZero();
    JsonNode errors = JSON.readTree(out.toString()).get("errors");
    assertThat(errors).hasSize(2);
    assertThat(errors.get(0).get("attempt").asInt()).isEqualTo(1);
    assertThat(errors.get(0).get("error").asText()).isEqualTo("connection refused");
    assertThat(errors.get(1).get("dead").asBoolean()).isTrue();
    assertThat(errors.get(1).get("at").asText()).startsWith("2026-12-07T10:00:04");
  }

  @Test
  void showOfAnUnknownIdExitsOneAndSaysSo() throws Exception {
    UUID unknown = UUID.randomUUID();

    assertThat(run("admin", "show", unknown.toString(), "--json")).isEqualTo(1);

    assertThat(err.toString()).contains("no event " + unknown);
    assertThat(JSON.readTree(out.toString()).get("error").asText()).contains(unknown.toString());
    reset();
    assertThat(run("admin", "show", "not-a-uuid")).isEqualTo(2);
    assertThat(err.toString()).contains("ID").contains("not-a-uuid");
  }

  // --- retry and discard -------------------------------------------------------------------

  @Test
  void retryOfAnAggregateAsksFirstAndDoesNothingWithoutAYes() throws Exception {
    UUID a = deadLetter("order", "5", "OrderPlaced", "boom");
    UUID b = backingOff("order", "5", "OrderPaid");

    assertThat(runWithInput("no\n", "admin", "retry", "--aggregate", "order/5")).isEqualTo(1);

    assertThat(out.toString()).contains(a.toString()).contains(b.toString()).contains("2 events");
    assertThat(err.toString()).contains("Retry these 2 events?");
    assertThat(out.toString()).contains("Not confirmed: nothing retried");
    assertThat(db.queryLong("select count(*) from outbox_events where dead_at is not null"))
        .isEqualTo(1);

    reset();
    assertThat(runWithInput("", "admin", "retry", "--aggregate", "order/5")).isEqualTo(1);
    assertThat(db.queryLong("select count(*) from outbox_events where attempts = 0")).isZero();

    reset();
    assertThat(runWithInput("yes\n", "admin", "retry", "--aggregate", "order/5")).isZero();
    assertThat(out.toString()).contains("Retried 2 events.");
    assertThat(
            db.queryLong(
                "select count(*) from outbox_events where attempts = 0 and dead_at is null"
                    + " and retry_after is null"))
        .isEqualTo(2);
  }

  @Test
  void retryTouchesExactlyThePrintedEventsEvenWhenTheOutboxChangesDuringTheQuestion()
      throws Exception {
    UUID a = deadLetter("order", "6", "OrderPlaced", "boom");
    UUID b = deadLetter("order", "6", "OrderPaid", "boom");
    // While the operator reads the list: another operator retries b and the relay publishes it,
    // and a new event of the aggregate dies. The retry must reset a only.
    Supplier<String> meanwhile =
        () -> {
          db.execute(
              "update outbox_events set dead_at = null, processed_at = now() where id = '"
                  + b
                  + "'");
          deadLetterUnchecked("order", "6", "OrderRefunded", "died during the question");
          return "yes";
        };

    assertThat(runAnswering(meanwhile, "admin", "retry", "--aggregate", "order/6", "--json"))
        .isZero();

    JsonNode report = JSON.readTree(out.toString());
    assertThat(ids(report.get("events"))).containsExactly(a.toString(), b.toString());
    assertThat(report.get("retried").asInt()).isEqualTo(1);
    assertThat(db.queryString("select dead_at::text from outbox_events where id = '" + a + "'"))
        .isNull();
    assertThat(
            db.queryLong(
                "select count(*) from outbox_events where event_type = 'OrderRefunded'"
                    + " and dead_at is not null"))
        .as("an event that died after the list was printed stays dead")
        .isEqualTo(1);
  }

  @Test
  void dryRunPrintsTheSelectionAndTouchesNothingEvenWithYes() throws Exception {
    deadLetter("order", "1", "OrderPlaced", "x");
    deadLetter("order", "2", "OrderPlaced", "y");

    assertThat(run("admin", "discard", "--type", "OrderPlaced", "--dry-run", "--yes", "--json"))
        .isZero();

    JsonNode report = JSON.readTree(out.toString());
    assertThat(report.get("dry_run").asBoolean()).isTrue();
    assertThat(report.get("matched").asInt()).isEqualTo(2);
    assertThat(report.get("discarded").asInt()).isZero();
    assertThat(db.queryLong("select count(*) from outbox_events")).isEqualTo(2);
  }

  @Test
  void retryOfOneEventNeedsNoConfirmationAndRefusesAPendingOne() throws Exception {
    UUID dead = deadLetter("order", "1", "OrderPlaced", "x");
    UUID pending = pending("order", "2", "OrderPlaced");

    assertThat(runWithInput("", "admin", "retry", dead.toString())).isZero();
    assertThat(out.toString()).contains("Retried 1 event.");

    reset();
    assertThat(run("admin", "retry", pending.toString())).isEqualTo(1);
    assertThat(err.toString())
        .contains("event " + pending + " is pending")
        .contains("only dead or backing-off events can be retried");

    reset();
    UUID unknown = UUID.randomUUID();
    assertThat(run("admin", "discard", unknown.toString())).isEqualTo(1);
    assertThat(err.toString()).contains("no event " + unknown);
  }

  @Test
  void discardByTypeWithYesDeletesOnlyItsDeadLetters() throws Exception {
    UUID dead1 = deadLetter("order", "1", "OrderPlaced", "x");
    UUID dead2 = deadLetter("order", "2", "OrderPlaced", "y");
    UUID backing = backingOff("order", "3", "OrderPlaced");
    UUID otherType = deadLetter("order", "4", "OrderShipped", "z");
    pending("order", "5", "OrderPlaced");

    assertThat(run("admin", "discard", "--type", "OrderPlaced", "--yes")).isZero();

    assertThat(out.toString())
        .contains(dead1.toString())
        .contains(dead2.toString())
        .doesNotContain(backing.toString())
        .contains("Discarded 2 events.");
    assertThat(db.queryLong("select count(*) from outbox_events")).isEqualTo(3);
    assertThat(db.queryLong("select count(*) from outbox_events where id = '" + otherType + "'"))
        .isEqualTo(1);
  }

  @Test
  void retryNeedsExactlyOneSelection() {
    assertThat(run("admin", "retry")).isEqualTo(2);
    assertThat(err.toString())
        .contains("retry needs exactly one of ID, --aggregate TYPE/ID or --type");
    reset();
    assertThat(run("admin", "retry", "--type", "A", "--aggregate", "order/1")).isEqualTo(2);
  }

  // --- connecting --------------------------------------------------------------------------

  @Test
  void theUrlComesFromTheEnvironmentWhenNotGiven() throws Exception {
    deadLetter("order", "1", "OrderPlaced", "x");

    int exit =
        runWith(
            Map.of(AdminCommand.JDBC_URL_VARIABLE, db.jdbcUrl()),
            "",
            "admin",
            "dead-letters",
            "--schema",
            db.schema(),
            "--json");

    assertThat(exit).as(err.toString()).isZero();
    assertThat(JSON.readTree(out.toString())).hasSize(1);

    reset();
    assertThat(runWith(Map.of(), "", "admin", "status")).isEqualTo(2);
    assertThat(err.toString()).contains("pass --jdbc-url or set PGOUTBOX_JDBC_URL");
  }

  @Test
  void aWrongUrlAMissingSchemaAndASchemaWithoutAnOutboxAreNamed() throws Exception {
    assertThat(run("admin", "status", "--jdbc-url", "jdbc:mysql://db/app?password=" + PASSWORD))
        .isEqualTo(2);
    assertThat(err.toString())
        .contains("--jdbc-url must be a PostgreSQL JDBC URL")
        .doesNotContain(PASSWORD);

    reset();
    assertThat(run("admin", "dead-letters", "--schema", "no_such_schema_here")).isEqualTo(2);
    assertThat(err.toString()).contains("schema 'no_such_schema_here' does not exist");

    reset();
    String empty = db.schema() + "_empty";
    db.execute("create schema " + empty);
    try {
      assertThat(run("admin", "status", "--schema", empty, "--json")).isEqualTo(2);
      assertThat(err.toString()).contains("holds no outbox").contains(empty + ".outbox_events");
      assertThat(JSON.readTree(out.toString()).get("status").asText()).isEqualTo("unreachable");
    } finally {
      db.execute("drop schema " + empty);
    }

    reset();
    assertThat(run("admin", "status", "--schema", "Robert'); drop table x;--")).isEqualTo(2);
    assertThat(err.toString()).contains("--schema");
  }

  @Test
  void aRoleWithoutGrantsIsToldWhichPrivilegeItLacks() throws Exception {
    UUID dead = deadLetter("order", "1", "OrderPlaced", "x");

    assertThat(runAs(bareRole, "admin", "status")).isEqualTo(2);
    assertThat(err.toString())
        .contains("role '" + bareRole + "' lacks USAGE on schema " + db.schema())
        .contains("grants.sql");

    reset();
    assertThat(runAs(readerRole, "admin", "dead-letters", "--json")).isZero();
    assertThat(ids(JSON.readTree(out.toString()))).containsExactly(dead.toString());

    reset();
    assertThat(runAs(readerRole, "admin", "retry", dead.toString())).isEqualTo(2);
    assertThat(err.toString())
        .contains("role '" + readerRole + "' lacks UPDATE (attempts) on " + db.schema())
        .contains("DELETE on");
    assertThat(db.queryLong("select count(*) from outbox_events where dead_at is not null"))
        .isEqualTo(1);
    // A dry run only reads, so the read-only role may preview.
    reset();
    assertThat(runAs(readerRole, "admin", "retry", dead.toString(), "--dry-run")).isZero();

    reset();
    assertThat(runAs(relayRole, "admin", "retry", dead.toString())).as(err.toString()).isZero();
    assertThat(db.queryLong("select count(*) from outbox_events where dead_at is not null"))
        .isZero();
  }

  // --- helpers -----------------------------------------------------------------------------

  private List<UUID> listIds(String... filters) throws Exception {
    reset();
    List<String> args = new ArrayList<>(List.of("admin", "dead-letters", "--json"));
    args.addAll(List.of(filters));
    assertThat(run(args.toArray(String[]::new))).as(err.toString()).isZero();
    List<UUID> ids = new ArrayList<>();
    JSON.readTree(out.toString()).forEach(n -> ids.add(UUID.fromString(n.get("id").asText())));
    return ids;
  }

  private static List<String> ids(JsonNode array) {
    List<String> ids = new ArrayList<>();
    array.forEach(n -> ids.add(n.get("id").asText()));
    return ids;
  }

  private void reset() {
    out = new StringWriter();
    err = new StringWriter();
  }

  private int run(String... args) {
    return runWith(Map.of(), "", withDatabase(db.jdbcUrl(), args));
  }

  private int runAs(String role, String... args) {
    String url =
        db.jdbcUrl()
                .replaceAll("([?&])(user|password)=[^&]*", "$1")
                .replaceAll("&&+", "&")
                .replace("?&", "?")
            + "&user="
            + role
            + "&password="
            + PASSWORD;
    return runWith(Map.of(), "", withDatabase(url, args));
  }

  private int runWithInput(String input, String... args) {
    return runWith(Map.of(), input, withDatabase(db.jdbcUrl(), args));
  }

  private int runAnswering(Supplier<String> answer, String... args) {
    BufferedReader reader =
        new BufferedReader(new StringReader("")) {
          @Override
          public String readLine() {
            return answer.get();
          }
        };
    return execute(Map.of(), reader, withDatabase(db.jdbcUrl(), args));
  }

  private int runWith(Map<String, String> env, String input, String... args) {
    return execute(env, new BufferedReader(new StringReader(input)), args);
  }

  private int execute(Map<String, String> env, BufferedReader input, String... args) {
    CommandLine command = new CommandLine(new Main());
    AdminCommand admin = command.getSubcommands().get("admin").getCommand();
    admin.with(env, input);
    command.setOut(new PrintWriter(out, true));
    command.setErr(new PrintWriter(err, true));
    return command.execute(args);
  }

  /** {@code args} with {@code --jdbc-url} and {@code --schema} added unless given. */
  private static String[] withDatabase(String url, String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    if (all.size() >= 2 && all.get(0).equals("admin")) {
      if (!all.contains("--jdbc-url")) {
        all.addAll(List.of("--jdbc-url", url));
      }
      if (!all.contains("--schema")) {
        all.addAll(List.of("--schema", db.schema()));
      }
    }
    return all.toArray(String[]::new);
  }

  private static void liveRelay(String name) {
    db.execute(
        "insert into outbox_relays (instance_id, relay_name, ordering, dead_letter_policy, source)"
            + " values (gen_random_uuid(), '"
            + name
            + "', 'STRICT', 'HOLD_AGGREGATE', 'TABLE')");
  }

  private static UUID pending(String aggregateType, String aggregateId, String eventType) {
    UUID id = UUID.randomUUID();
    db.execute(
        "insert into outbox_events (id, aggregate_type, aggregate_id, event_type, payload, headers)"
            + " values ('"
            + id
            + "', '"
            + aggregateType
            + "', '"
            + aggregateId
            + "', '"
            + eventType
            + "', '{\"card\": \"card-4242\"}',"
            + " '{\"traceparent\": \"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\"}')");
    return id;
  }

  private static UUID deadLetter(
      String aggregateType, String aggregateId, String eventType, String error) {
    UUID id = pending(aggregateType, aggregateId, eventType);
    db.execute(
        "update outbox_events set dead_at = clock_timestamp(), attempts = 10, last_error = '"
            + error.replace("'", "''")
            + "' where id = '"
            + id
            + "'");
    return id;
  }

  private static void deadLetterUnchecked(
      String aggregateType, String aggregateId, String eventType, String error) {
    deadLetter(aggregateType, aggregateId, eventType, error);
  }

  private static UUID backingOff(String aggregateType, String aggregateId, String eventType) {
    UUID id = pending(aggregateType, aggregateId, eventType);
    db.execute(
        "update outbox_events set retry_after = now() + interval '1 hour', attempts = 3,"
            + " last_error = 'connection refused' where id = '"
            + id
            + "'");
    return id;
  }
}

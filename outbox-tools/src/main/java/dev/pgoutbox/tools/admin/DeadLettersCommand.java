package dev.pgoutbox.tools.admin;

import com.fasterxml.jackson.databind.node.ArrayNode;
import dev.pgoutbox.admin.DeadLetterQuery;
import dev.pgoutbox.admin.OutboxAdmin;
import dev.pgoutbox.admin.StoredEvent;
import java.io.PrintWriter;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code admin dead-letters}: a filtered page of dead letters, newest or oldest first. */
@Command(
    name = "dead-letters",
    mixinStandardHelpOptions = true,
    description = {
      "Lists dead letters (payloads hidden; see show --payload), a page at a time, in the order"
          + " they were written.",
      "--json prints an array of objects with id, position, aggregate_type, aggregate_id,"
          + " event_type, attempts, dead_at, last_error and more."
    })
final class DeadLettersCommand extends AdminVerb {

  private static final Pattern RELATIVE = Pattern.compile("(\\d+)\\s*([smhd])");

  @Option(names = "--type", paramLabel = "EVENT_TYPE", description = "Only this event type")
  @Nullable String eventType;

  @Option(
      names = "--aggregate",
      paramLabel = "TYPE/ID",
      description = "Only this aggregate, as its type, a slash and its id (order/42)")
  @Nullable String aggregate;

  @Option(
      names = "--since",
      paramLabel = "WHEN",
      description =
          "Only events dead since this time: an instant (2025-06-01T03:00:00Z) or an age back"
              + " from now (90s, 15m, 2h, 7d)")
  @Nullable String since;

  @Option(
      names = "--error-contains",
      paramLabel = "TEXT",
      description = "Only events whose last error contains this text (ignoring case)")
  @Nullable String errorContains;

  @Option(
      names = "--order",
      paramLabel = "ORDER",
      defaultValue = "newest",
      description = "newest or oldest first (default: ${DEFAULT-VALUE})")
  String order = "newest";

  @Option(
      names = "--limit",
      paramLabel = "N",
      defaultValue = "50",
      description = "Page size, 1 to 1000 (default: ${DEFAULT-VALUE})")
  int limit = DeadLetterQuery.DEFAULT_LIMIT;

  @Option(
      names = "--after",
      paramLabel = "POSITION",
      defaultValue = "0",
      description = "The next page: the last position of the page before (printed below it)")
  long after;

  /** Where "15m" counts back from; a test replaces it. */
  Clock clock = Clock.systemUTC();

  @Override
  int run(OutboxAdmin admin) {
    DeadLetterQuery query = query();
    admin.checkAccess(false);
    List<StoredEvent> page = admin.deadLetters(query);
    if (json) {
      ArrayNode array = AdminJson.array();
      page.forEach(e -> array.add(AdminJson.event(e)));
      printJson(array);
      return OK;
    }
    PrintWriter out = out();
    if (page.isEmpty()) {
      out.println(query.after() == 0 ? "No dead letters match." : "No more dead letters.");
      out.flush();
      return OK;
    }
    out.printf(
        "%-10s %-36s %-24s %-30s %-24s %8s  %s%n",
        "POSITION", "ID", "DEAD AT", "AGGREGATE", "EVENT TYPE", "ATTEMPTS", "LAST ERROR");
    for (StoredEvent e : page) {
      out.printf(
          "%-10d %-36s %-24s %-30s %-24s %8d  %s%n",
          e.position(),
          e.id(),
          e.deadAt(),
          e.aggregateType() + "/" + e.aggregateId(),
          e.eventType(),
          e.attempts(),
          oneLine(e.lastError()));
    }
    if (page.size() == query.limit()) {
      out.printf("next page: --after %d%n", page.get(page.size() - 1).position());
    }
    out.flush();
    return OK;
  }

  private DeadLetterQuery query() {
    DeadLetterQuery.Builder b = DeadLetterQuery.builder();
    try {
      b.limit(limit).after(after);
    } catch (IllegalArgumentException e) {
      throw new AdminFailure("--" + e.getMessage());
    }
    b.newestFirst(
        switch (order) {
          case "newest" -> true;
          case "oldest" -> false;
          default ->
              throw new AdminFailure("--order must be newest or oldest, was '" + order + "'");
        });
    if (eventType != null) {
      b.eventType(eventType);
    }
    if (aggregate != null) {
      String[] parts = SelectionVerb.aggregate(aggregate);
      b.aggregate(parts[0], parts[1]);
    }
    if (since != null) {
      b.since(since(since, clock.instant()));
    }
    if (errorContains != null) {
      if (errorContains.isEmpty()) {
        throw new AdminFailure("--error-contains must not be empty");
      }
      b.errorContains(errorContains);
    }
    return b.build();
  }

  /**
   * An instant, or an age back from {@code now} ({@code 90s}, {@code 15m}, {@code 2h}, {@code 7d}).
   */
  static Instant since(String value, Instant now) {
    Matcher relative = RELATIVE.matcher(value.trim().toLowerCase(Locale.ROOT));
    if (relative.matches()) {
      long amount = Long.parseLong(relative.group(1));
      Duration back =
          switch (relative.group(2)) {
            case "s" -> Duration.ofSeconds(amount);
            case "m" -> Duration.ofMinutes(amount);
            case "h" -> Duration.ofHours(amount);
            default -> Duration.ofDays(amount);
          };
      return now.minus(back);
    }
    try {
      return Instant.parse(value);
    } catch (DateTimeParseException e) {
      throw new AdminFailure(
          "--since must be an instant (2025-06-01T03:00:00Z) or an age (90s, 15m, 2h, 7d), was '"
              + value
              + "'");
    }
  }

  private static String oneLine(@Nullable String text) {
    if (text == null) {
      return "";
    }
    String line = text.replaceAll("\\s+", " ");
    return line.length() > 120 ? line.substring(0, 117) + "..." : line;
  }
}

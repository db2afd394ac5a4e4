package dev.pgoutbox.spring.boot;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.admin.DeadLetter;
import dev.pgoutbox.admin.OutboxAdmin;
import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.OutboxStats;
import java.security.Principal;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.OperationResponseBody;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.annotation.DeleteOperation;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;

/**
 * The {@code outbox} Actuator endpoint, on {@link OutboxAdmin}'s public API:
 *
 * <ul>
 *   <li>{@code GET /actuator/outbox}: the backlog (pending, oldest pending age, dead letters,
 *       blocked aggregates) and, per relay of this application, whether it runs and what it did;
 *   <li>{@code GET /actuator/outbox/dead-letters?limit=50&after=0}: a page of dead letters, oldest
 *       first; pass the page's {@code next} as {@code after} for the next page;
 *   <li>{@code POST /actuator/outbox/dead-letters/{id}}: retry that dead letter (attempts reset,
 *       due at once);
 *   <li>{@code DELETE /actuator/outbox/dead-letters/{id}}: discard it for good.
 * </ul>
 *
 * <p>Read-only unless told: retry and discard answer 403 and write nothing until {@value
 * #WRITES_ENABLED_PROPERTY} is true (guard them with Spring Security first), and the dead-letter
 * list leaves each payload out until {@value #SHOW_PAYLOADS_PROPERTY} is true. Headers are never
 * listed. Every retry and discard is logged (INFO, discard WARN) with the caller's principal name,
 * or {@code anonymous}, the event id and the rows changed; every refused one too (WARN).
 *
 * <p>Expose it with {@code management.endpoints.web.exposure.include=outbox}; Boot's {@code
 * management.endpoint.outbox.access=read-only} also keeps the stats and the list and removes retry
 * and discard. Thread-safe.
 */
@Endpoint(id = "outbox")
public final class OutboxEndpoint {

  /** The path segment of the dead letters: {@value}. */
  public static final String DEAD_LETTERS = "dead-letters";

  /** Page size of the dead-letter list when the request names none: {@value}. */
  public static final int DEFAULT_PAGE_SIZE = 50;

  /** The property that turns retry and discard on: {@value}. */
  public static final String WRITES_ENABLED_PROPERTY = "pgoutbox.actuator.writes-enabled";

  /** The property that puts payloads in the dead-letter list: {@value}. */
  public static final String SHOW_PAYLOADS_PROPERTY = "pgoutbox.actuator.show-payloads";

  /** HTTP status of a write refused while writes are disabled: {@value}. */
  public static final int STATUS_FORBIDDEN = 403;

  private static final Logger LOG = LoggerFactory.getLogger(OutboxEndpoint.class);

  private final OutboxAdmin admin;
  private final List<OutboxRelayLifecycle> relays;
  private final boolean writesEnabled;
  private final boolean showPayloads;

  /**
   * A read-only endpoint on {@code admin}, reporting the relays of this application: retry and
   * discard refused, payloads left out.
   */
  public OutboxEndpoint(OutboxAdmin admin, List<OutboxRelayLifecycle> relays) {
    this(admin, relays, new PgOutboxProperties.Actuator());
  }

  /**
   * An endpoint on {@code admin}, reporting the relays of this application, with what {@code
   * settings} allow ({@code pgoutbox.actuator.*}, read once here).
   */
  public OutboxEndpoint(
      OutboxAdmin admin, List<OutboxRelayLifecycle> relays, PgOutboxProperties.Actuator settings) {
    this.admin = requireNonNull(admin, "admin must not be null");
    this.relays = List.copyOf(requireNonNull(relays, "relays must not be null"));
    requireNonNull(settings, "settings must not be null");
    this.writesEnabled = settings.isWritesEnabled();
    this.showPayloads = settings.isShowPayloads();
  }

  /** Whether retry and discard run ({@value #WRITES_ENABLED_PROPERTY}). */
  public boolean writesEnabled() {
    return writesEnabled;
  }

  /** Whether the dead-letter list carries payloads ({@value #SHOW_PAYLOADS_PROPERTY}). */
  public boolean showsPayloads() {
    return showPayloads;
  }

  /** The backlog and this application's relays. */
  @ReadOperation
  public OutboxDescriptor outbox() {
    OutboxStats stats = admin.stats();
    return new OutboxDescriptor(
        admin.schema(),
        stats.pending(),
        stats.oldestPendingAge().toString(),
        stats.deadLetters(),
        stats.blockedAggregates(),
        stats.oldestTransactionAge().toString(),
        relays.stream().map(OutboxEndpoint::describe).toList());
  }

  /**
   * A page of dead letters, oldest first.
   *
   * @param section {@value #DEAD_LETTERS}
   * @param limit page size, 1 to {@value OutboxAdmin#MAX_PAGE}; default {@value #DEFAULT_PAGE_SIZE}
   * @param after the {@code next} of the previous page; 0 or absent for the first page
   */
  @ReadOperation
  public DeadLettersDescriptor deadLetters(
      @Selector String section, @Nullable Integer limit, @Nullable Long after) {
    requireDeadLetters(section);
    int size = limit == null ? DEFAULT_PAGE_SIZE : limit;
    if (size < 1 || size > OutboxAdmin.MAX_PAGE) {
      throw new InvalidEndpointRequestException(
          "limit must be between 1 and " + OutboxAdmin.MAX_PAGE + ", was " + size, "Invalid limit");
    }
    long from = after == null ? 0 : after;
    List<DeadLetter> page = admin.deadLetters(size, from);
    Long next = page.size() == size ? page.get(page.size() - 1).position() : null;
    return new DeadLettersDescriptor(page.stream().map(this::describe).toList(), size, from, next);
  }

  /**
   * Retries one dead letter: attempts reset, due at once (see {@link OutboxAdmin#retry}). Refused
   * with {@value #STATUS_FORBIDDEN} and a {@link WriteRefusedDescriptor} while writes are disabled.
   *
   * @param section {@value #DEAD_LETTERS}
   * @param id the event id
   * @param caller who asks (its principal is logged)
   * @return a {@link DeadLetterActionDescriptor}, or the refusal
   */
  @WriteOperation
  public WebEndpointResponse<OperationResponseBody> retry(
      @Selector String section, @Selector UUID id, SecurityContext caller) {
    requireDeadLetters(section);
    return write("retry", id, caller, Level.INFO, () -> admin.retry(id));
  }

  /**
   * Discards one dead letter for good (see {@link OutboxAdmin#discard}). Refused with {@value
   * #STATUS_FORBIDDEN} and a {@link WriteRefusedDescriptor} while writes are disabled.
   *
   * @param section {@value #DEAD_LETTERS}
   * @param id the event id
   * @param caller who asks (its principal is logged)
   * @return a {@link DeadLetterActionDescriptor}, or the refusal
   */
  @DeleteOperation
  public WebEndpointResponse<OperationResponseBody> discard(
      @Selector String section, @Selector UUID id, SecurityContext caller) {
    requireDeadLetters(section);
    return write("discard", id, caller, Level.WARN, () -> admin.discard(id));
  }

  /** The one way every write of this endpoint goes: refused unless enabled, logged either way. */
  private WebEndpointResponse<OperationResponseBody> write(
      String action, UUID id, SecurityContext caller, Level level, Write write) {
    String who = principalName(caller);
    if (!writesEnabled) {
      LOG.atWarn()
          .addKeyValue("action", action)
          .addKeyValue("event_id", id)
          .addKeyValue("principal", who)
          .log(
              "pgoutbox-actuator[{}] - Refused {} of event {} by {}: {} is false",
              admin.schema(),
              action,
              id,
              who,
              WRITES_ENABLED_PROPERTY);
      return new WebEndpointResponse<>(
          new WriteRefusedDescriptor(
              STATUS_FORBIDDEN,
              action,
              "The outbox endpoint is read-only: "
                  + action
                  + " is refused while "
                  + WRITES_ENABLED_PROPERTY
                  + " is false (guard the endpoint's writes, e.g. with Spring Security, then set"
                  + " it to true)"),
          STATUS_FORBIDDEN);
    }
    boolean found = write.run();
    int rows = found ? 1 : 0;
    LOG.atLevel(level)
        .addKeyValue("action", action)
        .addKeyValue("event_id", id)
        .addKeyValue("principal", who)
        .addKeyValue("rows", rows)
        .log(
            "pgoutbox-actuator[{}] - {} of event {} by {}: {} row{}",
            admin.schema(),
            action.equals("retry") ? "Retry" : "Discard",
            id,
            who,
            rows,
            rows == 1 ? "" : "s");
    return new WebEndpointResponse<>(
        new DeadLetterActionDescriptor(id.toString(), action, found),
        WebEndpointResponse.STATUS_OK);
  }

  private static String principalName(@Nullable SecurityContext caller) {
    Principal principal = caller == null ? null : caller.getPrincipal();
    String name = principal == null ? null : principal.getName();
    return name == null || name.isBlank() ? "anonymous" : name;
  }

  /** One write of the admin API; returns whether it found its row. */
  @FunctionalInterface
  private interface Write {
    boolean run();
  }

  private static void requireDeadLetters(String section) {
    if (!DEAD_LETTERS.equals(section)) {
      throw new InvalidEndpointRequestException(
          "Unknown outbox section '" + section + "', expected '" + DEAD_LETTERS + "'",
          "Unknown outbox section");
    }
  }

  private static RelayDescriptor describe(OutboxRelayLifecycle lifecycle) {
    OutboxRelay relay = lifecycle.relay();
    RelayActivity activity = lifecycle.activity();
    return new RelayDescriptor(
        relay == null ? null : relay.name(),
        lifecycle.isRunning(),
        activity.published(),
        activity.retried(),
        activity.deadLettered(),
        text(activity.lastBatchAt()),
        activity.lastDatabaseError(),
        text(activity.lastDatabaseErrorAt()));
  }

  private DeadLetterDescriptor describe(DeadLetter d) {
    return new DeadLetterDescriptor(
        d.id().toString(),
        d.position(),
        d.aggregateType(),
        d.aggregateId(),
        d.eventType(),
        showPayloads ? d.payload() : null,
        d.attempts(),
        d.lastError(),
        d.createdAt().toString(),
        d.deadAt().toString());
  }

  private static @Nullable String text(@Nullable Instant instant) {
    return instant == null ? null : instant.toString();
  }

  /**
   * The answer of {@code GET /actuator/outbox}; durations in ISO-8601 ({@code PT1.5S}).
   *
   * @param schema the outbox schema
   * @param pending unprocessed events, dead letters excluded
   * @param oldestPendingAge age of the oldest pending event (the lag)
   * @param deadLetters dead events not yet retried or discarded
   * @param blockedAggregates aggregates whose oldest unprocessed event is dead or backing off
   * @param oldestTransactionAge age of the oldest open transaction in the database
   * @param relays this application's relays
   */
  public record OutboxDescriptor(
      String schema,
      long pending,
      String oldestPendingAge,
      long deadLetters,
      long blockedAggregates,
      String oldestTransactionAge,
      List<RelayDescriptor> relays)
      implements OperationResponseBody {}

  /**
   * One relay of this application; counts since it last started, instants in ISO-8601.
   *
   * @param name the relay's name; null before its first start
   * @param running whether it runs
   * @param published events published
   * @param retried failed attempts scheduled for a retry
   * @param deadLettered events dead-lettered
   * @param lastBatchAt when its last batch with events committed
   * @param lastDatabaseError the last database error it backed off from
   * @param lastDatabaseErrorAt when that happened
   */
  public record RelayDescriptor(
      @Nullable String name,
      boolean running,
      long published,
      long retried,
      long deadLettered,
      @Nullable String lastBatchAt,
      @Nullable String lastDatabaseError,
      @Nullable String lastDatabaseErrorAt) {}

  /**
   * A page of dead letters.
   *
   * @param deadLetters the page, oldest first
   * @param limit the page size asked for
   * @param after where the page starts (exclusive position)
   * @param next {@code after} for the next page; null (absent from the JSON) after the last page
   */
  public record DeadLettersDescriptor(
      List<DeadLetterDescriptor> deadLetters, int limit, long after, @Nullable Long next)
      implements OperationResponseBody {}

  /**
   * One dead letter (see {@link DeadLetter}); instants in ISO-8601.
   *
   * @param id event id
   * @param position place in the outbox
   * @param aggregateType the aggregate's type
   * @param aggregateId the aggregate's id
   * @param eventType the event's type
   * @param payload the payload as JSON text; null (absent from the JSON) unless {@value
   *     OutboxEndpoint#SHOW_PAYLOADS_PROPERTY} is true
   * @param attempts failed attempts
   * @param lastError the last failure's reason
   * @param createdAt when the event was written
   * @param deadAt when it was dead-lettered
   */
  public record DeadLetterDescriptor(
      String id,
      long position,
      String aggregateType,
      String aggregateId,
      String eventType,
      @Nullable String payload,
      int attempts,
      @Nullable String lastError,
      String createdAt,
      String deadAt) {}

  /**
   * The answer of a retry or a discard.
   *
   * @param id the event id
   * @param action {@code retry} or {@code discard}
   * @param found whether an unprocessed event (retry) or a dead letter (discard) had that id
   */
  public record DeadLetterActionDescriptor(String id, String action, boolean found)
      implements OperationResponseBody {}

  /**
   * The answer of a retry or a discard refused because writes are disabled.
   *
   * @param status {@value OutboxEndpoint#STATUS_FORBIDDEN}
   * @param action {@code retry} or {@code discard}
   * @param message why, naming {@value OutboxEndpoint#WRITES_ENABLED_PROPERTY}
   */
  public record WriteRefusedDescriptor(int status, String action, String message)
      implements OperationResponseBody {}
}

package dev.pgoutbox.admin;

import static java.util.Objects.requireNonNull;

import java.time.Instant;
import org.jspecify.annotations.Nullable;

/**
 * A page of dead letters to list with {@link OutboxAdmin#deadLetters(DeadLetterQuery)}: filters,
 * order and a keyset cursor. Immutable and thread-safe.
 *
 * <pre>{@code
 * DeadLetterQuery page = DeadLetterQuery.builder()
 *     .eventType("OrderPlaced").errorContains("timeout").since(Instant.now().minus(Duration.ofHours(1)))
 *     .newestFirst(true).limit(50).build();
 * List<StoredEvent> dead = admin.deadLetters(page);
 * // next page: .after(dead.getLast().position())
 * }</pre>
 */
public final class DeadLetterQuery {

  /** Default page size: {@value}. */
  public static final int DEFAULT_LIMIT = 50;

  private final @Nullable String eventType;
  private final @Nullable String aggregateType;
  private final @Nullable String aggregateId;
  private final @Nullable Instant since;
  private final @Nullable String errorContains;
  private final boolean newestFirst;
  private final int limit;
  private final long after;

  private DeadLetterQuery(Builder b) {
    this.eventType = b.eventType;
    this.aggregateType = b.aggregateType;
    this.aggregateId = b.aggregateId;
    this.since = b.since;
    this.errorContains = b.errorContains;
    this.newestFirst = b.newestFirst;
    this.limit = b.limit;
    this.after = b.after;
  }

  /** A builder: every dead letter, oldest first, {@value #DEFAULT_LIMIT} a page. */
  public static Builder builder() {
    return new Builder();
  }

  /** Only this event type; null for all. */
  public @Nullable String eventType() {
    return eventType;
  }

  /** Only this aggregate type; null for all. */
  public @Nullable String aggregateType() {
    return aggregateType;
  }

  /** Only this aggregate id (with {@link #aggregateType()}); null for all. */
  public @Nullable String aggregateId() {
    return aggregateId;
  }

  /** Only events dead at or after this time; null for all. */
  public @Nullable Instant since() {
    return since;
  }

  /** Only events whose last error contains this text, ignoring case; null for all. */
  public @Nullable String errorContains() {
    return errorContains;
  }

  /** Newest written first (else oldest first). */
  public boolean newestFirst() {
    return newestFirst;
  }

  /** Page size. */
  public int limit() {
    return limit;
  }

  /**
   * The cursor: 0 for the first page, else the last {@link StoredEvent#position()} of the page
   * before (the page continues past it in the query's order).
   */
  public long after() {
    return after;
  }

  @Override
  public String toString() {
    return "DeadLetterQuery[eventType="
        + eventType
        + ", aggregate="
        + (aggregateType == null ? null : aggregateType + "/" + aggregateId)
        + ", since="
        + since
        + ", errorContains="
        + errorContains
        + ", newestFirst="
        + newestFirst
        + ", limit="
        + limit
        + ", after="
        + after
        + "]";
  }

  /** Builds a {@link DeadLetterQuery}; not thread-safe. */
  public static final class Builder {
    private @Nullable String eventType;
    private @Nullable String aggregateType;
    private @Nullable String aggregateId;
    private @Nullable Instant since;
    private @Nullable String errorContains;
    private boolean newestFirst;
    private int limit = DEFAULT_LIMIT;
    private long after;

    private Builder() {}

    /** Only dead letters of this event type. */
    public Builder eventType(String eventType) {
      this.eventType = requireNonNull(eventType, "eventType must not be null");
      return this;
    }

    /** Only dead letters of this aggregate. */
    public Builder aggregate(String aggregateType, String aggregateId) {
      this.aggregateType = requireNonNull(aggregateType, "aggregateType must not be null");
      this.aggregateId = requireNonNull(aggregateId, "aggregateId must not be null");
      return this;
    }

    /** Only dead letters that died at or after {@code since}. */
    public Builder since(Instant since) {
      this.since = requireNonNull(since, "since must not be null");
      return this;
    }

    /**
     * Only dead letters whose last error contains {@code text}, ignoring case ({@code %} and {@code
     * _} are plain characters).
     *
     * @throws IllegalArgumentException if {@code text} is empty
     */
    public Builder errorContains(String text) {
      requireNonNull(text, "errorContains must not be null");
      if (text.isEmpty()) {
        throw new IllegalArgumentException("errorContains must not be empty");
      }
      this.errorContains = text;
      return this;
    }

    /** Newest written first ({@code true}) or oldest first ({@code false}, the default). */
    public Builder newestFirst(boolean newestFirst) {
      this.newestFirst = newestFirst;
      return this;
    }

    /**
     * Page size, 1 to {@value OutboxAdmin#MAX_PAGE}; default {@value #DEFAULT_LIMIT}.
     *
     * @throws IllegalArgumentException if out of range
     */
    public Builder limit(int limit) {
      if (limit < 1 || limit > OutboxAdmin.MAX_PAGE) {
        throw new IllegalArgumentException(
            "limit must be between 1 and " + OutboxAdmin.MAX_PAGE + ", was " + limit);
      }
      this.limit = limit;
      return this;
    }

    /**
     * Continue after this position (the last one of the previous page); 0 for the first page.
     *
     * @throws IllegalArgumentException if negative
     */
    public Builder after(long position) {
      if (position < 0) {
        throw new IllegalArgumentException("after must be 0 or a position, was " + position);
      }
      this.after = position;
      return this;
    }

    /** The query. */
    public DeadLetterQuery build() {
      return new DeadLetterQuery(this);
    }
  }
}

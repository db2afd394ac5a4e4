package dev.pgoutbox.core;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgoutbox.core.internal.Contexts;
import dev.pgoutbox.core.internal.EventInserts;
import dev.pgoutbox.core.internal.EventMessages;
import dev.pgoutbox.core.internal.Ids;
import dev.pgoutbox.core.internal.Json;
import dev.pgoutbox.core.internal.RenderedInserts;
import dev.pgoutbox.core.internal.Texts;
import dev.pgoutbox.core.internal.TraceHeaders;
import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.db.jooq.tables.records.OutboxEventsRecord;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.function.Supplier;
import org.jooq.DSLContext;
import org.jooq.JSONB;
import org.jooq.SQLDialect;
import org.jooq.conf.Settings;
import org.jooq.exception.DataAccessException;
import org.jooq.impl.DSL;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Appends events to the outbox inside the host's own transaction, so that they commit (or roll
 * back) with the host's business rows.
 *
 * <pre>{@code
 * Outbox outbox = Outbox.builder().schema("outbox").build();   // once, at start-up
 *
 * dsl.transaction(tx -> {
 *   tx.dsl().insertInto(ORDERS).set(order).execute();
 *   UUID eventId = outbox.append(tx.dsl(), OutboxEvent.of("order", order.id(), "order.created", order));
 * });
 * }</pre>
 *
 * <p>The outbox never begins, commits or rolls back: it sends one {@code INSERT} (which also takes
 * the aggregates' advisory locks, see {@link Builder#serializeWritersPerAggregate(boolean)}) on the
 * host's connection and returns. A connection in auto-commit mode is refused, since the event would
 * commit on its own; so is a {@code DSLContext} that hands out another connection per statement
 * (one on a pool rather than on the transaction, such as the outer context inside a jOOQ {@code
 * transaction(...)} lambda), since the event would not commit with the business rows. Every event
 * is checked before any statement is sent; a refused event ({@link InvalidEventException}) leaves
 * the host's transaction as it was, to continue or roll back.
 *
 * <p>Statements go through jOOQ's generated {@code OUTBOX_EVENTS} table, rendered into the
 * configured schema. With a {@code DSLContext}, the host's configuration is used as it is (its
 * connection provider, transaction, listeners and settings), with the schema mapping added.
 *
 * <p><b>Trace context.</b> When OpenTelemetry's API is on the class path and a span is current on
 * the calling thread, each event's headers get that context's W3C {@code traceparent} (and {@code
 * tracestate}), so the relay and the consumers continue the request's trace (see {@code
 * docs/tracing.md}); a header of the same name from the event or the {@link Builder#headers hook}
 * wins. Nothing is needed at run time without OpenTelemetry. {@link Builder#traceContext(boolean)}
 * turns it off.
 *
 * <p>Immutable and thread-safe: build one and share it.
 */
public final class Outbox {

  /**
   * Most rows in one {@code INSERT}: {@link #appendAll} splits longer lists into statements of this
   * many rows (all in the host's transaction), to stay within PostgreSQL's bind-parameter limit.
   */
  public static final int MAX_ROWS_PER_STATEMENT = 5_000;

  /**
   * Default {@link Builder#maxPayloadBytes(int)}: 1 MiB, the largest message most brokers take by
   * default (Kafka's {@code max.message.bytes}, NATS's {@code max_payload}).
   */
  public static final int DEFAULT_MAX_PAYLOAD_BYTES = 1_048_576;

  /**
   * Largest {@link Builder#maxPayloadBytes(int)}: 255 MiB, about the largest value PostgreSQL's
   * {@code jsonb} holds.
   */
  public static final int MAX_PAYLOAD_BYTES = 255 * 1_048_576;

  /** Default {@link Builder#maxHeaders(int)}. */
  public static final int DEFAULT_MAX_HEADERS = 64;

  /** Largest {@link Builder#maxHeaders(int)}. */
  public static final int MAX_HEADERS = 10_000;

  /** Default {@link Builder#maxHeaderBytes(int)}: 16 KiB. */
  public static final int DEFAULT_MAX_HEADER_BYTES = 16_384;

  /** Largest {@link Builder#maxHeaderBytes(int)}: 16 MiB. */
  public static final int MAX_HEADER_BYTES = 16 * 1_048_576;

  private static final Logger LOG = LoggerFactory.getLogger(Outbox.class);

  private final String schema;
  private final Settings settings;
  private final ObjectMapper objectMapper;
  private final @Nullable Supplier<? extends @Nullable Map<String, String>> headers;
  private final boolean serializeWritersPerAggregate;
  private final boolean traceContext;
  private final boolean baggage;
  private final int maxPayloadBytes;
  private final int maxHeaders;
  private final int maxHeaderBytes;
  private final OutboxTransport transport;
  private final String messagePrefix;
  private final RenderedInserts renderedInserts;

  private Outbox(Builder builder) {
    this.schema = builder.schema;
    this.settings = Contexts.settings(schema);
    this.renderedInserts = new RenderedInserts(DSL.using(SQLDialect.POSTGRES, settings));
    this.objectMapper = builder.objectMapper != null ? builder.objectMapper : Json.defaultMapper();
    this.headers = builder.headers;
    this.serializeWritersPerAggregate = builder.serializeWritersPerAggregate;
    this.traceContext = builder.traceContext && TraceHeaders.available();
    this.baggage = builder.baggage;
    this.maxPayloadBytes = builder.maxPayloadBytes;
    this.maxHeaders = builder.maxHeaders;
    this.maxHeaderBytes = builder.maxHeaderBytes;
    this.transport = builder.transport;
    this.messagePrefix = OutboxTransport.messagePrefix(schema);
    LOG.debug("pgoutbox-outbox - Built {}", this);
  }

  /** A builder of an {@code Outbox}; the builder is not thread-safe, the outbox is. */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * A new {@code ObjectMapper} configured as the outbox's default: {@code java.time} values
   * (JavaTimeModule) written as ISO-8601 text, not numbers. Consumers can read payloads with it.
   */
  public static ObjectMapper defaultObjectMapper() {
    return Json.defaultMapper();
  }

  /**
   * Appends one event in the transaction of {@code tx} (a jOOQ context on the host's transaction,
   * e.g. {@code configuration.dsl()} inside {@code dsl.transaction(...)}).
   *
   * @return the event's id: its explicit id, or a new UUIDv7
   * @throws InvalidEventException if the payload does not serialize to JSON that PostgreSQL stores
   *     unchanged, the payload or headers are over their limits ({@link
   *     Builder#maxPayloadBytes(int)}), or the headers hook returns a bad header; nothing was sent
   * @throws OutboxException if {@code tx} is not in a transaction (auto-commit mode, or a context
   *     on a pool rather than on the transaction; nothing was sent), or the insert fails (the
   *     host's transaction is then aborted and must be rolled back)
   */
  public UUID append(DSLContext tx, OutboxEvent event) {
    requireNonNull(tx, "tx");
    requireNonNull(event, "event");
    return write(Contexts.derive(tx, schema), null, List.of(event), false).get(0);
  }

  /**
   * Appends one event in the transaction of a plain JDBC connection; the connection is neither
   * committed nor closed.
   *
   * @return the event's id: its explicit id, or a new UUIDv7
   * @throws InvalidEventException if the payload does not serialize to JSON that PostgreSQL stores
   *     unchanged, the payload or headers are over their limits ({@link
   *     Builder#maxPayloadBytes(int)}), or the headers hook returns a bad header; nothing was sent
   * @throws OutboxException if {@code tx} is in auto-commit mode (nothing was sent), or the insert
   *     fails (the host's transaction is then aborted and must be rolled back)
   */
  public UUID append(Connection tx, OutboxEvent event) {
    requireNonNull(tx, "tx");
    requireNonNull(event, "event");
    return write(Contexts.on(tx, settings), tx, List.of(event), false).get(0);
  }

  /**
   * Appends {@code events}, in their order, with one multi-row {@code INSERT} (one per {@value
   * #MAX_ROWS_PER_STATEMENT} events). Their {@code position}s follow the list's order. Every event
   * is checked first: if one is refused, none is written, and the message names its index, e.g.
   * {@code events[2] (aggregate order/42, type order.created): payload ...}. An empty list sends
   * nothing.
   *
   * @return the events' ids, in the order of {@code events}
   * @throws InvalidEventException if an event is null, its payload does not serialize to JSON that
   *     PostgreSQL stores unchanged, its payload or headers are over their limits, two events share
   *     an explicit id, or the headers hook returns a bad header; nothing was sent
   * @throws OutboxException if {@code tx} is not in a transaction (auto-commit mode, or a context
   *     on a pool rather than on the transaction; nothing was sent), or the insert fails (the
   *     host's transaction is then aborted and must be rolled back)
   */
  public List<UUID> appendAll(DSLContext tx, List<OutboxEvent> events) {
    requireNonNull(tx, "tx");
    requireNonNull(events, "events");
    return write(Contexts.derive(tx, schema), null, events, true);
  }

  /**
   * Like {@link #appendAll(DSLContext, List)}, on a plain JDBC connection, which is neither
   * committed nor closed.
   *
   * @return the events' ids, in the order of {@code events}
   * @throws InvalidEventException if an event is refused; nothing was sent
   * @throws OutboxException if {@code tx} is in auto-commit mode (nothing was sent), or the insert
   *     fails (the host's transaction is then aborted and must be rolled back)
   */
  public List<UUID> appendAll(Connection tx, List<OutboxEvent> events) {
    requireNonNull(tx, "tx");
    requireNonNull(events, "events");
    return write(Contexts.on(tx, settings), tx, events, true);
  }

  /** The schema that holds the outbox tables. */
  public String schema() {
    return schema;
  }

  /** Most bytes of an event's payload, as JSON text in UTF-8: {@link Builder#maxPayloadBytes}. */
  public int maxPayloadBytes() {
    return maxPayloadBytes;
  }

  /** Most headers of an event, as stored: {@link Builder#maxHeaders}. */
  public int maxHeaders() {
    return maxHeaders;
  }

  /** Most bytes of an event's header keys and values, in UTF-8: {@link Builder#maxHeaderBytes}. */
  public int maxHeaderBytes() {
    return maxHeaderBytes;
  }

  /** How events are written: {@link Builder#transport(OutboxTransport)}. */
  public OutboxTransport transport() {
    return transport;
  }

  /** Whether {@code append} takes the aggregate's advisory lock before inserting. */
  public boolean serializesWritersPerAggregate() {
    return serializeWritersPerAggregate;
  }

  @Override
  public String toString() {
    return "Outbox[schema="
        + schema
        + ", transport="
        + transport
        + ", serializeWritersPerAggregate="
        + serializeWritersPerAggregate
        + ", headersHook="
        + (headers != null)
        + ", traceContext="
        + (traceContext ? (baggage ? "W3C+baggage" : "W3C") : "off")
        + ", maxPayloadBytes="
        + maxPayloadBytes
        + ", maxHeaders="
        + maxHeaders
        + ", maxHeaderBytes="
        + maxHeaderBytes
        + "]";
  }

  /**
   * Writes through {@code tx}, or, when the host gave a plain JDBC connection ({@code direct}),
   * with the statement rendered once for its shape (no host jOOQ listeners to honour there).
   */
  private List<UUID> write(
      DSLContext tx, @Nullable Connection direct, List<OutboxEvent> events, boolean batch) {
    if (events.isEmpty()) {
      return List.of();
    }
    Map<String, String> contextHeaders = contextHeaders();
    List<OutboxEventsRecord> rows = new ArrayList<>(events.size());
    Set<UUID> explicitIds = new HashSet<>();
    for (int i = 0; i < events.size(); i++) {
      OutboxEvent event = events.get(i);
      if (event == null) {
        throw new InvalidEventException("events[" + i + "] must not be null");
      }
      UUID explicit = event.id();
      if (explicit != null && !explicitIds.add(explicit)) {
        throw new InvalidEventException(
            describe(event, i, batch) + ": id " + explicit + " is used by an earlier event");
      }
      rows.add(row(event, i, batch, contextHeaders));
    }
    Contexts.TransactionCheck check = transactionCheck(tx);
    if (check != Contexts.TransactionCheck.IN_TRANSACTION) {
      throw new OutboxException(
          "Outbox.append needs the host's transaction, but "
              + check.reason()
              + ": the event would not commit with the business rows. Call it inside a"
              + " transaction, on its connection or context (jOOQ transaction(...), Spring"
              + " @Transactional, or Connection.setAutoCommit(false)); nothing was written");
    }
    if (transport == OutboxTransport.MESSAGES) {
      emit(tx, rows);
      return ids(rows);
    }
    try {
      List<String> lockKeys = List.of();
      if (serializeWritersPerAggregate) {
        Set<String> keys = new TreeSet<>();
        for (OutboxEventsRecord row : rows) {
          keys.add(EventInserts.lockKey(row.getAggregateType(), row.getAggregateId()));
        }
        lockKeys = new ArrayList<>(keys);
      }
      for (int from = 0; from < rows.size(); from += MAX_ROWS_PER_STATEMENT) {
        // The first statement takes every lock before any row gets its position.
        insert(
            tx,
            direct,
            rows.subList(from, Math.min(rows.size(), from + MAX_ROWS_PER_STATEMENT)),
            from == 0 ? lockKeys : List.of());
      }
    } catch (DataAccessException | SQLException e) {
      throw appendFailed(rows, ", to " + schema + ".outbox_events", e);
    }
    return ids(rows);
  }

  /** A failed append, naming its first event and where it was going ({@code where}, after it). */
  private static OutboxException appendFailed(
      List<OutboxEventsRecord> rows, String where, Exception e) {
    OutboxEventsRecord first = rows.get(0);
    return new OutboxException(
        "Could not append "
            + (rows.size() == 1 ? "event " : rows.size() + " events, the first ")
            + first.getId()
            + " (aggregate "
            + first.getAggregateType()
            + "/"
            + first.getAggregateId()
            + ", type "
            + first.getEventType()
            + ")"
            + where
            + ": "
            + e.getMessage(),
        e);
  }

  private static List<UUID> ids(List<OutboxEventsRecord> rows) {
    List<UUID> ids = new ArrayList<>(rows.size());
    for (OutboxEventsRecord row : rows) {
      ids.add(row.getId());
    }
    return List.copyOf(ids);
  }

  /**
   * The message transport: one logical decoding message per event, in order, in the host's
   * transaction ({@link EventMessages}). No advisory lock: the WAL relay publishes in commit order,
   * which needs no serialization of writers.
   */
  private void emit(DSLContext tx, List<OutboxEventsRecord> rows) {
    try {
      for (int from = 0; from < rows.size(); from += MAX_ROWS_PER_STATEMENT) {
        List<OutboxEventsRecord> part =
            rows.subList(from, Math.min(rows.size(), from + MAX_ROWS_PER_STATEMENT));
        List<byte[]> contents = new ArrayList<>(part.size());
        for (OutboxEventsRecord row : part) {
          contents.add(
              EventMessages.encode(
                  row.getId(),
                  row.getAggregateType(),
                  row.getAggregateId(),
                  row.getEventType(),
                  row.getPayload().data(),
                  row.getHeaders().data()));
        }
        tx.fetch(
            EventMessages.statement(part.size()), EventMessages.binds(messagePrefix, contents));
      }
    } catch (DataAccessException e) {
      throw appendFailed(
          rows,
          " as logical decoding messages "
              + messagePrefix
              + " (transport MESSAGES; the role needs EXECUTE on"
              + " pg_catalog.pg_logical_emit_message, see docs/wal-messages.md)",
          e);
    }
  }

  private OutboxEventsRecord row(
      OutboxEvent event, int index, boolean batch, Map<String, String> contextHeaders) {
    String payload;
    if (event.payload() instanceof RawJson raw) {
      payload = raw.json(); // Checked when the RawJson was made.
      requirePayloadWithinLimit(payload, event, index, batch);
    } else {
      try {
        payload = Json.write(objectMapper, event.payload(), "payload");
        // Measured before the check, which parses the whole text.
        requirePayloadWithinLimit(payload, event, index, batch);
        Json.check(payload, "payload");
      } catch (IllegalArgumentException e) {
        throw new InvalidEventException(describe(event, index, batch) + ": " + e.getMessage(), e);
      }
    }
    Map<String, String> merged = contextHeaders;
    if (!event.headers().isEmpty()) {
      merged = new LinkedHashMap<>(contextHeaders);
      merged.putAll(event.headers()); // The event's own headers win.
    }
    requireHeadersWithinLimits(merged, event, index, batch);
    UUID id = event.id() != null ? event.id() : Ids.next();
    return new OutboxEventsRecord()
        .setId(id)
        .setAggregateType(event.aggregateType())
        .setAggregateId(event.aggregateId())
        .setEventType(event.eventType())
        .setPayload(JSONB.valueOf(payload))
        .setHeaders(JSONB.valueOf(Json.headers(merged)));
  }

  private void requirePayloadWithinLimit(
      String payload, OutboxEvent event, int index, boolean batch) {
    // UTF-8 takes at least one byte per char: a short text needs no count.
    if (payload.length() <= maxPayloadBytes / 3) {
      return;
    }
    long bytes = Texts.utf8Length(payload);
    if (bytes > maxPayloadBytes) {
      throw new InvalidEventException(
          describe(event, index, batch)
              + ": payload is "
              + bytes
              + " bytes (JSON in UTF-8), more than the limit of "
              + maxPayloadBytes
              + " (Outbox.Builder.maxPayloadBytes)");
    }
  }

  /** The headers as stored: the trace context's, the hook's and the event's own. */
  private void requireHeadersWithinLimits(
      Map<String, String> headers, OutboxEvent event, int index, boolean batch) {
    if (headers.isEmpty()) {
      return;
    }
    if (headers.size() > maxHeaders) {
      throw new InvalidEventException(
          describe(event, index, batch)
              + ": headers are "
              + headers.size()
              + " entries, more than the limit of "
              + maxHeaders
              + " (Outbox.Builder.maxHeaders)");
    }
    long bytes = 0;
    for (Map.Entry<String, String> header : headers.entrySet()) {
      bytes += Texts.utf8Length(header.getKey()) + Texts.utf8Length(header.getValue());
    }
    if (bytes > maxHeaderBytes) {
      throw new InvalidEventException(
          describe(event, index, batch)
              + ": headers are "
              + bytes
              + " bytes (keys and values in UTF-8), more than the limit of "
              + maxHeaderBytes
              + " (Outbox.Builder.maxHeaderBytes)");
    }
  }

  private void insert(
      DSLContext tx,
      @Nullable Connection direct,
      List<OutboxEventsRecord> rows,
      List<String> sortedLockKeys)
      throws SQLException {
    int inserted;
    if (direct != null) {
      inserted = renderedInserts.execute(direct, rows, sortedLockKeys);
    } else {
      inserted =
          sortedLockKeys.isEmpty()
              ? EventInserts.plain(tx, rows).execute()
              : EventInserts.holdingLocks(tx, rows, sortedLockKeys).execute();
    }
    if (inserted != rows.size()) {
      throw new IllegalStateException(
          "Inserted " + inserted + " rows into outbox_events instead of " + rows.size());
    }
  }

  /** The trace context's headers, then the hook's on top (the hook wins). */
  private Map<String, String> contextHeaders() {
    Map<String, String> trace = traceContext ? TraceHeaders.current(baggage) : Map.of();
    Map<String, String> hooked = hookHeaders();
    if (trace.isEmpty()) {
      return hooked;
    }
    if (hooked.isEmpty()) {
      return trace;
    }
    Map<String, String> merged = new LinkedHashMap<>(trace);
    merged.putAll(hooked);
    return merged;
  }

  private Map<String, String> hookHeaders() {
    if (headers == null) {
      return Map.of();
    }
    Map<String, String> supplied;
    try {
      supplied = headers.get();
    } catch (RuntimeException e) {
      throw new OutboxException("The headers hook failed: " + e, e);
    }
    if (supplied == null) {
      return Map.of(); // e.g. MDC.getCopyOfContextMap() when the MDC is empty.
    }
    return OutboxEvent.checkedHeaders(supplied, "headers from the headers hook");
  }

  private static Contexts.TransactionCheck transactionCheck(DSLContext tx) {
    try {
      return Contexts.check(tx);
    } catch (DataAccessException e) {
      throw new OutboxException(
          "Could not tell whether the connection is in a transaction: " + e.getMessage(), e);
    }
  }

  private static String describe(OutboxEvent event, int index, boolean batch) {
    return (batch ? "events[" + index + "]" : "event")
        + " (aggregate "
        + event.aggregateType()
        + "/"
        + event.aggregateId()
        + ", type "
        + event.eventType()
        + ")";
  }

  /**
   * Builds an {@link Outbox}. Every setter checks its argument at once; not thread-safe.
   *
   * <pre>{@code
   * Outbox outbox = Outbox.builder()
   *     .schema("outbox")
   *     .objectMapper(applicationObjectMapper)
   *     .headers(() -> Map.of("tenant", currentTenant()))
   *     .serializeWritersPerAggregate(true)
   *     .build();
   * }</pre>
   */
  public static final class Builder {
    private String schema = OutboxSchema.DEFAULT_SCHEMA;
    private @Nullable ObjectMapper objectMapper;
    private @Nullable Supplier<? extends @Nullable Map<String, String>> headers;
    private boolean serializeWritersPerAggregate = true;
    private boolean traceContext = true;
    private boolean baggage;
    private int maxPayloadBytes = DEFAULT_MAX_PAYLOAD_BYTES;
    private int maxHeaders = DEFAULT_MAX_HEADERS;
    private int maxHeaderBytes = DEFAULT_MAX_HEADER_BYTES;
    private OutboxTransport transport = OutboxTransport.ROWS;

    private Builder() {}

    /**
     * How events are written (default {@link OutboxTransport#ROWS}). {@link
     * OutboxTransport#MESSAGES} writes each event as {@code
     * pg_catalog.pg_logical_emit_message(true, 'pgoutbox:<schema>', <event>)} in the caller's
     * transaction, no row: only a {@code WalRelay} built with the same transport publishes it, so
     * switch the relays first (they read both transports), then the writers. The checks of every
     * event are the same; {@link #serializeWritersPerAggregate(boolean)} has no effect (the WAL
     * relay follows commit order). The writer's role needs {@code EXECUTE} on the function, which
     * pgoutbox asks to take from {@code PUBLIC} (docs/wal-messages.md).
     */
    public Builder transport(OutboxTransport transport) {
      this.transport = requireNonNull(transport, "transport");
      return this;
    }

    /**
     * The schema that holds the outbox tables, as given to {@code OutboxSchema.migrate}. Default
     * {@value OutboxSchema#DEFAULT_SCHEMA}. Statements name it explicitly, whatever the
     * connection's {@code search_path}.
     *
     * @throws IllegalArgumentException if {@code schema} is not a plain lower-case identifier
     */
    public Builder schema(String schema) {
      this.schema = OutboxSchema.requireValidName(schema);
      return this;
    }

    /**
     * The mapper that serializes payloads, typically the application's own, so that payloads look
     * like the rest of its JSON. Default: {@link Outbox#defaultObjectMapper()}. The mapper must not
     * be reconfigured after {@code build()}.
     */
    public Builder objectMapper(ObjectMapper objectMapper) {
      this.objectMapper = requireNonNull(objectMapper, "objectMapper");
      return this;
    }

    /**
     * A hook whose headers are added to every appended event, e.g. a correlation id from the
     * logging context (the OpenTelemetry trace context is stored without a hook: {@link
     * #traceContext(boolean)}). Called once per {@code append}/{@code appendAll} call, on the
     * caller's thread. An event's own headers win over the hook's for the same key. The hook may
     * return null (no headers), but not a null key or value.
     *
     * <pre>{@code
     * .headers(() -> Map.of("tenant", TenantContext.current()))
     * .headers(MDC::getCopyOfContextMap)
     * }</pre>
     */
    public Builder headers(Supplier<? extends @Nullable Map<String, String>> headers) {
      this.headers = requireNonNull(headers, "headers");
      return this;
    }

    /**
     * Whether {@code append} takes a transaction-level advisory lock on each aggregate it writes
     * ({@code pg_advisory_xact_lock(hashtextextended(aggregate_type || ':' || aggregate_id, 0))})
     * before its rows get their positions, held until the host commits or rolls back. Default
     * {@code true}: the relay's per-aggregate order holds whoever writes.
     *
     * <p>The relay publishes an aggregate's events in {@code position} order. Positions are taken
     * at insert, commits happen later: without the lock, two transactions writing one aggregate may
     * commit in the other order than their positions, and the relay may then publish the
     * later-positioned event first. With it, a writer waits for the aggregate's previous writer to
     * finish, and position order is commit order.
     *
     * <p>Costs: no extra round trip (the locks are taken inside the {@code INSERT} statement);
     * concurrent writers of one aggregate wait for each other until commit; a transaction that
     * appends to several aggregates in separate calls, in varying orders, can deadlock with another
     * (PostgreSQL aborts one of them): append to aggregates in a consistent order, or pass them to
     * one {@code appendAll}, which locks them in a fixed (sorted) order. Turn it off only when
     * every transaction that writes an aggregate's events already serializes on the aggregate (e.g.
     * updates its row first).
     */
    public Builder serializeWritersPerAggregate(boolean serialize) {
      this.serializeWritersPerAggregate = serialize;
      return this;
    }

    /**
     * Whether {@code append} stores the current OpenTelemetry context's W3C {@code traceparent} and
     * {@code tracestate} in each event's headers. Default {@code true}; it does something only when
     * OpenTelemetry's API is on the class path and a valid span is current on the calling thread. A
     * header of the same name from the event or the {@link #headers hook} wins.
     */
    public Builder traceContext(boolean store) {
      this.traceContext = store;
      return this;
    }

    /**
     * Whether {@code append} also stores the current OpenTelemetry context's W3C {@code baggage}
     * header (when not empty). Default {@code false}: baggage often carries user data that should
     * not sit in a table; turn it on when consumers need it.
     */
    public Builder baggage(boolean store) {
      this.baggage = store;
      return this;
    }

    /**
     * Most bytes of an event's payload, as JSON text in UTF-8 (the text the {@code ObjectMapper}
     * writes, or a {@link RawJson}'s). Default {@value Outbox#DEFAULT_MAX_PAYLOAD_BYTES} (1 MiB),
     * the largest message most brokers take by default; raise it together with the broker's limit
     * and the relay's {@code RelayConfig.maxBatchBytes}. A larger event is refused with {@link
     * InvalidEventException}, e.g. {@code payload is 8388608 bytes (JSON in UTF-8), more than the
     * limit of 1048576 (Outbox.Builder.maxPayloadBytes)}, before anything is sent.
     *
     * @throws IllegalArgumentException if {@code bytes} is not between 1 and {@value
     *     Outbox#MAX_PAYLOAD_BYTES}
     */
    public Builder maxPayloadBytes(int bytes) {
      this.maxPayloadBytes = between("maxPayloadBytes", bytes, 1, MAX_PAYLOAD_BYTES);
      return this;
    }

    /**
     * Most headers of an event, counted as stored: the trace context's, the {@link #headers hook}'s
     * and the event's own, one per key. Default {@value Outbox#DEFAULT_MAX_HEADERS}. An event with
     * more is refused with {@link InvalidEventException} before anything is sent.
     *
     * @throws IllegalArgumentException if {@code count} is not between 0 and {@value
     *     Outbox#MAX_HEADERS}
     */
    public Builder maxHeaders(int count) {
      this.maxHeaders = between("maxHeaders", count, 0, MAX_HEADERS);
      return this;
    }

    /**
     * Most bytes of an event's header keys and values together, in UTF-8, counted as stored (see
     * {@link #maxHeaders(int)}). Default {@value Outbox#DEFAULT_MAX_HEADER_BYTES} (16 KiB); brokers
     * and HTTP servers refuse much larger headers. An event with more is refused with {@link
     * InvalidEventException} before anything is sent.
     *
     * @throws IllegalArgumentException if {@code bytes} is not between 0 and {@value
     *     Outbox#MAX_HEADER_BYTES}
     */
    public Builder maxHeaderBytes(int bytes) {
      this.maxHeaderBytes = between("maxHeaderBytes", bytes, 0, MAX_HEADER_BYTES);
      return this;
    }

    private static int between(String name, int value, int min, int max) {
      if (value < min || value > max) {
        throw new IllegalArgumentException(
            name + " must be between " + min + " and " + max + ", was " + value);
      }
      return value;
    }

    /** The outbox. */
    public Outbox build() {
      return new Outbox(this);
    }
  }
}

package dev.pgoutbox.example.orders;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgoutbox.core.Inbox;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The shipping side: applies order events read from the broker. It creates a shipment when an order
 * is paid and cancels it when the order is cancelled.
 *
 * <p><b>Once.</b> Each event is applied through {@link Inbox#handleOnce}: the inbox row and the
 * shipment change commit together, so a redelivered event (same event id) changes nothing.
 *
 * <p><b>In order.</b> Every order event carries the order's version; shipping remembers the last
 * version it applied per order and refuses an event that does not follow it (an event that arrives
 * before the one it follows). A refused event changes nothing, is not recorded in the inbox, and is
 * counted as an ordering error ({@code shipping_ordering_errors_total}).
 *
 * <p>Thread-safe; the broker consumers call {@link #apply} from their own threads.
 */
public final class ShippingService {

  /** The inbox consumer name of shipping. */
  public static final String CONSUMER = "shipping";

  private static final Logger LOG = LoggerFactory.getLogger(ShippingService.class);

  private final DataSource dataSource;
  private final String schema;
  private final Inbox inbox;
  private final ObjectMapper json;
  private final Counter applied;
  private final Counter duplicates;
  private final Counter outOfOrder;
  private final Counter orderingErrors;
  private final Counter rejected;

  /** What became of one delivered event. */
  public enum Outcome {
    /** Applied (first delivery, in order). */
    APPLIED,
    /** Already applied: the inbox ignored this redelivery. */
    DUPLICATE,
    /** Refused: it does not follow the last version applied for its order. */
    OUT_OF_ORDER,
    /** Unusable (no event id, no order id or version): logged, counted and skipped. */
    REJECTED
  }

  /**
   * A shipment as {@code GET /shipments/{orderId}} shows it.
   *
   * @param id the shipment id
   * @param orderId the order shipped
   * @param status {@code READY} or {@code CANCELLED}
   * @param createdByEvent the {@code order.paid} event that created it
   * @param createdAt when it was created
   * @param updatedAt when it last changed
   */
  public record Shipment(
      long id,
      UUID orderId,
      String status,
      UUID createdByEvent,
      Instant createdAt,
      Instant updatedAt) {}

  /**
   * Shipping on {@code schema}, recording handled events in {@code inbox}.
   *
   * @param registry where {@code shipping_events_total{outcome}} and {@code
   *     shipping_ordering_errors_total} are counted
   */
  public ShippingService(
      DataSource dataSource,
      String schema,
      Inbox inbox,
      ObjectMapper json,
      MeterRegistry registry) {
    this.dataSource = requireNonNull(dataSource, "dataSource");
    this.schema = requireNonNull(schema, "schema");
    this.inbox = requireNonNull(inbox, "inbox");
    this.json = requireNonNull(json, "json");
    this.applied = outcomeCounter(registry, "applied");
    this.duplicates = outcomeCounter(registry, "duplicate");
    this.outOfOrder = outcomeCounter(registry, "out_of_order");
    this.rejected = outcomeCounter(registry, "rejected");
    this.orderingErrors =
        Counter.builder("shipping.ordering.errors")
            .description("Order events refused because they arrived before the one they follow")
            .register(registry);
  }

  /**
   * Applies one delivered event in its own transaction.
   *
   * @param eventId the event id from the broker's dedup key
   * @param eventType e.g. {@code order.paid}
   * @param payload the event's JSON
   * @throws IllegalArgumentException if the payload has no {@code orderId} or {@code version}
   * @throws RuntimeException if the database fails (nothing was applied; deliver it again)
   */
  public Outcome apply(UUID eventId, String eventType, String payload) {
    requireNonNull(eventId, "eventId");
    JsonNode body;
    try {
      body = json.readTree(payload);
    } catch (IOException e) {
      throw new IllegalArgumentException(
          "event " + eventId + " (" + eventType + ") has no JSON payload: " + e.getMessage(), e);
    }
    JsonNode orderNode = body.get("orderId");
    JsonNode versionNode = body.get("version");
    if (orderNode == null || versionNode == null || !versionNode.canConvertToInt()) {
      throw new IllegalArgumentException(
          "event " + eventId + " (" + eventType + ") has no orderId and version: " + payload);
    }
    UUID orderId = UUID.fromString(orderNode.asText());
    int version = versionNode.intValue();
    try {
      boolean ran =
          Transactions.inTransaction(
              dataSource,
              tx ->
                  inbox.handleOnce(
                      tx,
                      CONSUMER,
                      eventId,
                      () -> handle(tx, eventId, eventType, orderId, version)));
      if (ran) {
        applied.increment();
        return Outcome.APPLIED;
      }
      duplicates.increment();
      LOG.info(
          "Ignored a redelivery of event {} ({}, order {}): already applied",
          eventId,
          eventType,
          orderId);
      return Outcome.DUPLICATE;
    } catch (OutOfOrderException e) {
      outOfOrder.increment();
      orderingErrors.increment();
      LOG.error(
          "Refused event {} ({}, order {}): version {} does not follow the last applied version"
              + " {}",
          eventId,
          eventType,
          orderId,
          version,
          e.lastApplied);
      return Outcome.OUT_OF_ORDER;
    }
  }

  /**
   * Records a delivery that can never be applied (no event id, a payload without {@code orderId}
   * and {@code version}): retrying it would block the consumer forever, so the broker consumers
   * skip it after this call, which logs it and counts it ({@code
   * shipping_events_total{outcome="rejected"}}).
   *
   * @param where the broker's coordinates of the message, for the log
   */
  public Outcome reject(String where, RuntimeException reason) {
    rejected.increment();
    LOG.error("Rejected the message at {}: {}", where, reason.getMessage());
    return Outcome.REJECTED;
  }

  /** The shipments of one order (one, once it is paid; none before). */
  public List<Shipment> shipments(UUID orderId) {
    return Transactions.inTransaction(
        dataSource,
        tx -> {
          List<Shipment> found = new ArrayList<>();
          try (PreparedStatement select =
              tx.prepareStatement(
                  "SELECT id, status, created_by_event, created_at, updated_at FROM "
                      + schema
                      + ".shipments WHERE order_id = ? ORDER BY id")) {
            select.setObject(1, orderId);
            try (ResultSet rs = select.executeQuery()) {
              while (rs.next()) {
                found.add(
                    new Shipment(
                        rs.getLong(1),
                        orderId,
                        rs.getString(2),
                        rs.getObject(3, UUID.class),
                        rs.getObject(4, OffsetDateTime.class).toInstant(),
                        rs.getObject(5, OffsetDateTime.class).toInstant()));
              }
            }
          }
          return List.copyOf(found);
        });
  }

  /** Events applied since start. */
  public long appliedCount() {
    return (long) applied.count();
  }

  /** Redeliveries the inbox ignored since start. */
  public long duplicateCount() {
    return (long) duplicates.count();
  }

  /** Events refused for arriving out of order since start. */
  public long orderingErrorCount() {
    return (long) orderingErrors.count();
  }

  private void handle(Connection tx, UUID eventId, String eventType, UUID orderId, int version)
      throws SQLException {
    Integer last = null;
    try (PreparedStatement select =
        tx.prepareStatement(
            "SELECT last_version FROM "
                + schema
                + ".shipping_progress WHERE order_id = ? FOR UPDATE")) {
      select.setObject(1, orderId);
      try (ResultSet rs = select.executeQuery()) {
        if (rs.next()) {
          last = rs.getInt(1);
        }
      }
    }
    int expected = last == null ? 1 : last + 1;
    if (version != expected) {
      // Rolls the transaction back, inbox row included: the event is refused, not consumed.
      throw new OutOfOrderException(last);
    }
    switch (eventType) {
      case OrderEvents.PAID -> {
        try (PreparedStatement insert =
            tx.prepareStatement(
                "INSERT INTO "
                    + schema
                    + ".shipments (order_id, status, created_by_event) VALUES (?, 'READY', ?)")) {
          insert.setObject(1, orderId);
          insert.setObject(2, eventId);
          insert.executeUpdate();
        }
      }
      case OrderEvents.CANCELLED -> {
        try (PreparedStatement update =
            tx.prepareStatement(
                "UPDATE "
                    + schema
                    + ".shipments SET status = 'CANCELLED', updated_at = now() WHERE order_id = ?")) {
          update.setObject(1, orderId);
          update.executeUpdate();
        }
      }
      default -> {
        // order.created and anything new: nothing to ship yet, but the version moves on.
      }
    }
    try (PreparedStatement upsert =
        tx.prepareStatement(
            "INSERT INTO "
                + schema
                + ".shipping_progress (order_id, last_version) VALUES (?, ?)"
                + " ON CONFLICT (order_id) DO UPDATE SET last_version = EXCLUDED.last_version,"
                + " updated_at = now()")) {
      upsert.setObject(1, orderId);
      upsert.setInt(2, version);
      upsert.executeUpdate();
    }
  }

  private static Counter outcomeCounter(MeterRegistry registry, String outcome) {
    return Counter.builder("shipping.events")
        .description("Order events delivered to shipping, by what became of them")
        .tag("outcome", outcome)
        .register(registry);
  }

  /** Thrown inside the inbox handler to roll back an event that arrived too early. */
  private static final class OutOfOrderException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final transient @Nullable Integer lastApplied;

    OutOfOrderException(@Nullable Integer lastApplied) {
      super(null, null, false, false);
      this.lastApplied = lastApplied;
    }
  }
}

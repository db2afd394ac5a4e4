package dev.pgoutbox.example.orders;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgoutbox.core.Inbox;
import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.testing.TestSchema;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The shipping side alone, on PostgreSQL: once per event id, in order per order, or refused. */
class ShippingServiceIT {

  @RegisterExtension static final TestSchema db = TestSchema.empty();

  static ShippingService shipping;

  @BeforeAll
  static void migrate() {
    OrderApplication.migrate(db.dataSource(), db.schema());
    shipping =
        new ShippingService(
            db.dataSource(),
            db.schema(),
            Inbox.builder().schema(db.schema()).build(),
            Outbox.defaultObjectMapper(),
            new SimpleMeterRegistry());
  }

  @Test
  void paymentCreatesOneShipmentAndARedeliveryChangesNothing() {
    UUID order = UUID.randomUUID();
    UUID paid = UUID.randomUUID();
    assertThat(shipping.apply(UUID.randomUUID(), OrderEvents.CREATED, payload(order, 1)))
        .isEqualTo(ShippingService.Outcome.APPLIED);
    assertThat(shipping.apply(paid, OrderEvents.PAID, payload(order, 2)))
        .isEqualTo(ShippingService.Outcome.APPLIED);
    long duplicates = shipping.duplicateCount();

    assertThat(shipping.apply(paid, OrderEvents.PAID, payload(order, 2)))
        .isEqualTo(ShippingService.Outcome.DUPLICATE);

    assertThat(shipping.shipments(order))
        .singleElement()
        .satisfies(
            s -> {
              assertThat(s.status()).isEqualTo("READY");
              assertThat(s.createdByEvent()).isEqualTo(paid);
            });
    assertThat(shipping.duplicateCount()).isEqualTo(duplicates + 1);
  }

  @Test
  void anEventArrivingBeforeTheOneItFollowsIsRefusedCountedAndLeavesNoTrace() {
    UUID order = UUID.randomUUID();
    UUID paid = UUID.randomUUID();
    UUID cancelled = UUID.randomUUID();
    shipping.apply(UUID.randomUUID(), OrderEvents.CREATED, payload(order, 1));
    long errors = shipping.orderingErrorCount();

    // order.cancelled (version 3) before order.paid (version 2): refused.
    assertThat(shipping.apply(cancelled, OrderEvents.CANCELLED, payload(order, 3)))
        .isEqualTo(ShippingService.Outcome.OUT_OF_ORDER);
    assertThat(shipping.orderingErrorCount()).isEqualTo(errors + 1);
    assertThat(
            db.queryLong(
                "SELECT count(*) FROM processed_events WHERE event_id = '" + cancelled + "'"))
        .as("a refused event is not recorded in the inbox")
        .isZero();
    assertThat(shipping.shipments(order)).isEmpty();

    // Delivered again in order, both apply: the refusal did not consume the event.
    assertThat(shipping.apply(paid, OrderEvents.PAID, payload(order, 2)))
        .isEqualTo(ShippingService.Outcome.APPLIED);
    assertThat(shipping.apply(cancelled, OrderEvents.CANCELLED, payload(order, 3)))
        .isEqualTo(ShippingService.Outcome.APPLIED);
    assertThat(shipping.shipments(order))
        .singleElement()
        .satisfies(s -> assertThat(s.status()).isEqualTo("CANCELLED"));
  }

  @Test
  void aLaterEventOfAnOrderNeverSeenIsRefused() {
    UUID order = UUID.randomUUID();
    assertThat(shipping.apply(UUID.randomUUID(), OrderEvents.PAID, payload(order, 2)))
        .isEqualTo(ShippingService.Outcome.OUT_OF_ORDER);
    assertThat(shipping.shipments(order)).isEmpty();
  }

  @Test
  void aPayloadWithoutOrderIdOrVersionIsRejectedWithTheEventId() {
    UUID event = UUID.randomUUID();
    assertThatThrownBy(() -> shipping.apply(event, OrderEvents.PAID, "{\"amount\": 1}"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(event.toString());
  }

  private static String payload(UUID order, int version) {
    return "{\"orderId\":\"" + order + "\",\"version\":" + version + "}";
  }
}

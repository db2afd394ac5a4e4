/**
 * The example's order service: {@link dev.pgoutbox.example.orders.OrderService} (orders and their
 * events in one transaction), {@link dev.pgoutbox.example.orders.ShippingService} (the consumer
 * side, through the inbox), the HTTP API, the broker links and {@link
 * dev.pgoutbox.example.orders.OrderApplication}, which wires them with the embedded relay.
 */
@NullMarked
package dev.pgoutbox.example.orders;

import org.jspecify.annotations.NullMarked;

package dev.pgoutbox.spring.boot;

import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/** The JPA host's business entity in {@link JpaTransactionIT}. */
@Entity
@Table(name = "purchase_orders")
public class PurchaseOrder {

  @Id private String id;

  protected PurchaseOrder() {}

  PurchaseOrder(String id) {
    this.id = id;
  }

  String id() {
    return id;
  }
}

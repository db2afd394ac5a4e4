package dev.pgoutbox.example.orders;

import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A checked request to place an order: {@code {customerId, items: [{sku, quantity, unitPrice}]}}.
 *
 * @param customerId who orders
 * @param items at least one line
 */
public record NewOrder(String customerId, List<Order.Item> items) {

  /** Longest customer id: the column's size. */
  public static final int MAX_CUSTOMER_ID_LENGTH = 100;

  /** Longest SKU: the column's size. */
  public static final int MAX_SKU_LENGTH = 64;

  /** Most lines in one order. */
  public static final int MAX_ITEMS = 1_000;

  /** Largest quantity of one line. */
  public static final int MAX_QUANTITY = 10_000;

  /** Largest unit price. */
  public static final BigDecimal MAX_UNIT_PRICE = new BigDecimal("1000000.00");

  private static final Set<String> ORDER_FIELDS = Set.of("customerId", "items");
  private static final Set<String> ITEM_FIELDS = Set.of("sku", "quantity", "unitPrice");

  /**
   * Reads and checks a request body. Every problem is collected, so the client learns all of them
   * at once.
   *
   * @throws InvalidRequestException listing each bad field
   */
  public static NewOrder from(JsonNode body) {
    List<FieldError> errors = new ArrayList<>();
    if (!body.isObject()) {
      throw new InvalidRequestException(
          List.of(new FieldError("$", "must be a JSON object, was " + kind(body))));
    }
    unknownFields(body, ORDER_FIELDS, "", errors);
    String customerId = text(body.get("customerId"), "customerId", MAX_CUSTOMER_ID_LENGTH, errors);
    List<Order.Item> items = new ArrayList<>();
    JsonNode itemsNode = body.get("items");
    if (itemsNode == null || itemsNode.isNull()) {
      errors.add(new FieldError("items", "is required: a non-empty array of order lines"));
    } else if (!itemsNode.isArray()) {
      errors.add(new FieldError("items", "must be an array, was " + kind(itemsNode)));
    } else if (itemsNode.isEmpty() || itemsNode.size() > MAX_ITEMS) {
      errors.add(
          new FieldError(
              "items", "must hold between 1 and " + MAX_ITEMS + " lines, had " + itemsNode.size()));
    } else {
      for (int i = 0; i < itemsNode.size(); i++) {
        Order.Item item = item(itemsNode.get(i), "items[" + i + "]", errors);
        if (item != null) {
          items.add(item);
        }
      }
    }
    if (!errors.isEmpty()) {
      throw new InvalidRequestException(errors);
    }
    return new NewOrder(customerId, List.copyOf(items));
  }

  /** Sum of quantity times unit price. */
  public BigDecimal total() {
    BigDecimal total = BigDecimal.ZERO.setScale(2);
    for (Order.Item item : items) {
      total = total.add(item.unitPrice().multiply(BigDecimal.valueOf(item.quantity())));
    }
    return total;
  }

  private static Order.@org.jspecify.annotations.Nullable Item item(
      JsonNode node, String path, List<FieldError> errors) {
    if (!node.isObject()) {
      errors.add(new FieldError(path, "must be an object, was " + kind(node)));
      return null;
    }
    int before = errors.size();
    unknownFields(node, ITEM_FIELDS, path + ".", errors);
    String sku = text(node.get("sku"), path + ".sku", MAX_SKU_LENGTH, errors);
    int quantity = 0;
    JsonNode q = node.get("quantity");
    if (q == null || q.isNull()) {
      errors.add(new FieldError(path + ".quantity", "is required"));
    } else if (!q.isIntegralNumber() || !q.canConvertToInt()) {
      errors.add(new FieldError(path + ".quantity", "must be a whole number, was " + q));
    } else {
      quantity = q.intValue();
      if (quantity < 1 || quantity > MAX_QUANTITY) {
        errors.add(
            new FieldError(
                path + ".quantity", "must be between 1 and " + MAX_QUANTITY + ", was " + quantity));
      }
    }
    BigDecimal unitPrice = BigDecimal.ZERO;
    JsonNode p = node.get("unitPrice");
    if (p == null || p.isNull()) {
      errors.add(new FieldError(path + ".unitPrice", "is required"));
    } else if (!p.isNumber()) {
      errors.add(new FieldError(path + ".unitPrice", "must be a number, was " + p));
    } else {
      unitPrice = p.decimalValue();
      if (unitPrice.signum() < 0 || unitPrice.compareTo(MAX_UNIT_PRICE) > 0) {
        errors.add(
            new FieldError(
                path + ".unitPrice",
                "must be between 0 and " + MAX_UNIT_PRICE.toPlainString() + ", was " + p));
      } else if (unitPrice.stripTrailingZeros().scale() > 2) {
        errors.add(
            new FieldError(path + ".unitPrice", "must have at most 2 decimal places, was " + p));
      } else {
        unitPrice = unitPrice.setScale(2);
      }
    }
    return errors.size() == before ? new Order.Item(sku, quantity, unitPrice) : null;
  }

  private static String text(
      @org.jspecify.annotations.Nullable JsonNode node,
      String path,
      int maxLength,
      List<FieldError> errors) {
    if (node == null || node.isNull()) {
      errors.add(new FieldError(path, "is required"));
      return "";
    }
    if (!node.isTextual()) {
      errors.add(new FieldError(path, "must be a string, was " + kind(node)));
      return "";
    }
    String value = node.textValue();
    if (value.isBlank()) {
      errors.add(new FieldError(path, "must not be blank"));
    } else if (value.codePointCount(0, value.length()) > maxLength) {
      errors.add(
          new FieldError(
              path,
              "must be at most "
                  + maxLength
                  + " characters long, was "
                  + value.codePointCount(0, value.length())));
    } else if (value.indexOf('\u0000') >= 0) {
      errors.add(new FieldError(path, "must not contain U+0000"));
    }
    return value;
  }

  private static void unknownFields(
      JsonNode node, Set<String> known, String prefix, List<FieldError> errors) {
    for (Map.Entry<String, JsonNode> field : node.properties()) {
      String name = field.getKey();
      if (!known.contains(name)) {
        errors.add(
            new FieldError(prefix + name, "is not a known field (expected one of " + known + ")"));
      }
    }
  }

  private static String kind(JsonNode node) {
    return switch (node.getNodeType()) {
      case ARRAY -> "an array";
      case OBJECT -> "an object";
      case STRING -> "a string";
      case NUMBER -> "a number";
      case BOOLEAN -> "a boolean";
      case NULL -> "null";
      default -> node.getNodeType().toString().toLowerCase(java.util.Locale.ROOT);
    };
  }
}

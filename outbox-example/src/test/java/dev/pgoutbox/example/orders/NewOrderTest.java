package dev.pgoutbox.example.orders;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

class NewOrderTest {

  private static final ObjectMapper JSON =
      new ObjectMapper().enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS);

  private static JsonNode json(String text) throws Exception {
    return JSON.readTree(text);
  }

  @Test
  void aValidOrderIsReadWithExactPricesAndItsTotal() throws Exception {
    NewOrder order =
        NewOrder.from(
            json(
                "{\"customerId\":\"c-1\",\"items\":[{\"sku\":\"A\",\"quantity\":3,\"unitPrice\":0.1},"
                    + "{\"sku\":\"B\",\"quantity\":1,\"unitPrice\":19.99}]}"));
    assertThat(order.customerId()).isEqualTo("c-1");
    assertThat(order.items()).hasSize(2);
    assertThat(order.total()).isEqualByComparingTo("20.29");
  }

  @Test
  void everyBadFieldIsNamedAtOnce() {
    assertThatThrownBy(
            () ->
                NewOrder.from(
                    json(
                        "{\"customerId\":\"\",\"items\":[{\"sku\":\"A\",\"quantity\":0,"
                            + "\"unitPrice\":1},{\"sku\":7,\"quantity\":2,\"unitPrice\":\"x\"}]}")))
        .isInstanceOfSatisfying(
            InvalidRequestException.class,
            e ->
                assertThat(e.errors())
                    .extracting(FieldError::field)
                    .containsExactly(
                        "customerId", "items[0].quantity", "items[1].sku", "items[1].unitPrice"));
  }

  @Test
  void limitsNameTheirBoundAndTheValue() {
    String longSku = "S".repeat(NewOrder.MAX_SKU_LENGTH + 1);
    assertThatThrownBy(
            () ->
                NewOrder.from(
                    json(
                        "{\"customerId\":\"c\",\"items\":[{\"sku\":\""
                            + longSku
                            + "\",\"quantity\":100000,\"unitPrice\":2000000}]}")))
        .isInstanceOf(InvalidRequestException.class)
        .hasMessageContaining("items[0].sku must be at most 64 characters long, was 65")
        .hasMessageContaining("items[0].quantity must be between 1 and 10000, was 100000")
        .hasMessageContaining("items[0].unitPrice must be between 0 and 1000000.00");
  }

  @Test
  void tooManyLinesAreRefused() {
    StringBuilder body = new StringBuilder("{\"customerId\":\"c\",\"items\":[");
    for (int i = 0; i <= NewOrder.MAX_ITEMS; i++) {
      body.append(i == 0 ? "" : ",").append("{\"sku\":\"a\",\"quantity\":1,\"unitPrice\":1}");
    }
    body.append("]}");
    assertThatThrownBy(() -> NewOrder.from(json(body.toString())))
        .hasMessageContaining("items must hold between 1 and 1000 lines, had 1001");
  }
}

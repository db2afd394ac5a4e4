package dev.pgoutbox.testing;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The checker's fast path reads what Jackson's tree reads, or declines and leaves it to Jackson.
 */
class FlatPayloadTest {

  private static final ObjectMapper JSON = new ObjectMapper();

  @ParameterizedTest
  @ValueSource(
      strings = {
        "{\"seq\": 7, \"aggregate\": \"agg-12\"}", // PostgreSQL's jsonb text
        "{\"aggregate\":\"w0-agg-1\",\"seq\":1}", // Jackson's
        "{\"aggregate\":\"a\",\"seq\":3,\"written_at\":1764000000123}", // the chaos writers'
        " {\n\t\"aggregate\" : \"ä-ß-✓\" , \"seq\" : 2147483647 } ",
        "{\"aggregate\":\"a\",\"seq\":1,\"aggregate\":\"b\",\"seq\":2}",
        "{\"other\":\"x\",\"n\":-4,\"aggregate\":\"a\",\"seq\":-0}",
      })
  void readsThePlainShapeAsJacksonDoes(String payload) throws Exception {
    byte[] bytes = payload.getBytes(StandardCharsets.UTF_8);
    FlatPayload flat = FlatPayload.parse(bytes);
    JsonNode tree = JSON.readTree(bytes);

    assertThat(flat).isNotNull();
    assertThat(flat.aggregate).isEqualTo(tree.get("aggregate").asText());
    assertThat(flat.seq).isEqualTo(tree.get("seq").asInt());
    if (tree.has("written_at")) {
      assertThat(flat.writtenAt).isEqualTo(tree.get("written_at").asLong());
    } else {
      assertThat(flat.writtenAt).isNull();
    }
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "{\"aggregate\":\"a\\\"b\",\"seq\":1}", // an escape
        "{\"aggregate\":\"a\",\"seq\":1.5}",
        "{\"aggregate\":\"a\",\"seq\":\"1\"}",
        "{\"aggregate\":1,\"seq\":1}",
        "{\"aggregate\":\"a\",\"seq\":1,\"nested\":{\"x\":1}}",
        "{\"aggregate\":\"a\",\"seq\":1,\"flag\":true}",
        "{\"aggregate\":\"a\",\"seq\":99999999999}",
        "{\"aggregate\":\"a\"}",
        "{\"seq\":1}",
        "{}",
        "[1]",
        "not json",
        "{\"aggregate\":\"a\",\"seq\":1",
      })
  void declinesEverythingElse(String payload) {
    assertThat(FlatPayload.parse(payload.getBytes(StandardCharsets.UTF_8))).isNull();
  }
}

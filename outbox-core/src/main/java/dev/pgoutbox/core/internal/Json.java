package dev.pgoutbox.core.internal;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Turns payloads and headers into JSON text that PostgreSQL's {@code jsonb} stores unchanged, and
 * refuses (with {@link IllegalArgumentException}) what it would reject or alter.
 */
public final class Json {

  /** Most digits PostgreSQL's numeric keeps before the decimal point. */
  static final int PG_MAX_INTEGER_DIGITS = 131_072;

  /** Most digits PostgreSQL's numeric keeps after the decimal point. */
  static final int PG_MAX_SCALE = 16_383;

  /** Strict JSON (Jackson's defaults) with PostgreSQL's limits for numbers and strings. */
  private static final JsonFactory STRICT =
      JsonFactory.builder()
          .streamReadConstraints(
              StreamReadConstraints.builder()
                  .maxNumberLength(PG_MAX_INTEGER_DIGITS + PG_MAX_SCALE + 16)
                  .maxStringLength(Integer.MAX_VALUE)
                  .build())
          .build();

  private Json() {}

  /** A new mapper with {@code java.time} support, writing dates and durations as ISO-8601 text. */
  public static ObjectMapper defaultMapper() {
    return JsonMapper.builder()
        .addModule(new JavaTimeModule())
        .disable(SerializationFeature.WRITE_DATES_AS_TIMESTAMPS)
        .disable(SerializationFeature.WRITE_DURATIONS_AS_TIMESTAMPS)
        .build();
  }

  /** Serializes {@code payload} with {@code mapper} and checks the result with {@link #check}. */
  public static String serialize(ObjectMapper mapper, Object payload, String field) {
    String json = write(mapper, payload, field);
    check(json, field);
    return json;
  }

  /** Serializes {@code payload} with {@code mapper}, unchecked: {@link #check} it next. */
  public static String write(ObjectMapper mapper, Object payload, String field) {
    String json;
    try {
      json = mapper.writeValueAsString(payload);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException(
          field
              + " of type "
              + payload.getClass().getName()
              + " cannot be serialized to JSON: "
              + e.getMessage(),
          e);
    }
    return json;
  }

  /**
   * Checks that {@code json} is one strict JSON value that {@code jsonb} stores unchanged: no
   * U+0000 or unpaired surrogate in any key or string, every number within numeric's range.
   */
  public static void check(String json, String field) {
    try (JsonParser parser = STRICT.createParser(json)) {
      JsonToken token = parser.nextToken();
      if (token == null) {
        throw new IllegalArgumentException(field + " must be a JSON value, was empty");
      }
      while (token != null) {
        switch (token) {
          case FIELD_NAME -> requireStorable(parser.currentName(), field + " key", parser);
          case VALUE_STRING -> requireStorable(parser.getText(), field + " string", parser);
          case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> requireNumeric(parser, field);
          default -> {}
        }
        if (parser.getParsingContext().inRoot()) {
          break;
        }
        token = parser.nextToken();
      }
      if (parser.nextToken() != null) {
        throw new IllegalArgumentException(
            field + " must be one JSON value, found more after it at offset " + offset(parser));
      }
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException(
          field + " is not valid JSON: " + e.getOriginalMessage() + " at offset " + offset(e), e);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Headers as a JSON object; keys and values must already have been checked. */
  public static String headers(Map<String, String> headers) {
    if (headers.isEmpty()) {
      return "{}";
    }
    StringWriter out = new StringWriter();
    try (JsonGenerator generator = STRICT.createGenerator(out)) {
      generator.writeStartObject();
      for (Map.Entry<String, String> header : headers.entrySet()) {
        generator.writeStringField(header.getKey(), header.getValue());
      }
      generator.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out.toString();
  }

  private static void requireStorable(@Nullable String text, String what, JsonParser parser) {
    if (text == null) {
      return;
    }
    String problem = Texts.unstorableProblem(what + " at " + path(parser), text);
    if (problem != null) {
      throw new IllegalArgumentException(problem);
    }
  }

  private static void requireNumeric(JsonParser parser, String field) throws IOException {
    String text = parser.getText();
    boolean exponent = text.indexOf('e') >= 0 || text.indexOf('E') >= 0;
    if (!exponent && text.length() <= PG_MAX_SCALE) {
      return; // Neither part can exceed numeric's limits.
    }
    BigDecimal value = parser.getDecimalValue();
    long integerDigits = (long) value.precision() - value.scale();
    if (integerDigits > PG_MAX_INTEGER_DIGITS || value.scale() > PG_MAX_SCALE) {
      throw new IllegalArgumentException(
          field
              + " number at "
              + path(parser)
              + " is out of PostgreSQL's numeric range (at most "
              + PG_MAX_INTEGER_DIGITS
              + " digits before the decimal point and "
              + PG_MAX_SCALE
              + " after), was "
              + Texts.printable(text));
    }
  }

  private static String path(JsonParser parser) {
    String pointer = parser.getParsingContext().pathAsPointer().toString();
    return pointer.isEmpty() ? "/" : Texts.printable(pointer);
  }

  private static long offset(JsonParser parser) {
    return parser.currentTokenLocation().getCharOffset();
  }

  private static long offset(JsonProcessingException e) {
    return e.getLocation() == null ? -1 : e.getLocation().getCharOffset();
  }
}

package dev.pgoutbox.console;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * How the console reads a request's parameters and body, and writes its answers: JSON documents,
 * errors, and the security headers every answer carries.
 */
final class ConsoleAnswers {

  static final ObjectMapper JSON = new ObjectMapper();

  private ConsoleAnswers() {}

  static JsonNode body(ConsoleRequest request) {
    if (request.body().length > OutboxConsole.MAX_BODY_BYTES) {
      throw new BadRequest(
          413,
          "too-large",
          "the body must be at most "
              + OutboxConsole.MAX_BODY_BYTES
              + " bytes, was "
              + request.body().length);
    }
    try {
      JsonNode body = JSON.readTree(request.body());
      if (body == null || !body.isObject()) {
        throw new BadRequest(400, "bad-request", "the body must be a JSON object");
      }
      return body;
    } catch (JsonProcessingException e) {
      throw new BadRequest(400, "bad-request", "the body is not JSON: " + e.getOriginalMessage());
    } catch (IOException e) {
      throw new BadRequest(400, "bad-request", "the body could not be read: " + e.getMessage());
    }
  }

  static @Nullable String text(JsonNode body, String field) {
    JsonNode value = body.get(field);
    if (value == null || value.isNull()) {
      return null;
    }
    if (!value.isTextual() || value.asText().isEmpty()) {
      throw new BadRequest(400, "bad-request", field + " must be a non-empty string");
    }
    return value.asText();
  }

  static long number(ConsoleRequest request, String name, long fallback, long min, long max) {
    String value = request.param(name);
    if (value == null) {
      return fallback;
    }
    try {
      long n = Long.parseLong(value);
      if (n < min || n > max) {
        throw new NumberFormatException();
      }
      return n;
    } catch (NumberFormatException e) {
      throw new BadRequest(
          400,
          "bad-request",
          name
              + " must be a whole number between "
              + min
              + " and "
              + max
              + ", was '"
              + value
              + "'");
    }
  }

  static UUID uuid(String text, String field) {
    try {
      return UUID.fromString(text);
    } catch (IllegalArgumentException e) {
      throw new BadRequest(
          400, "bad-request", field + " must hold event ids (UUIDs), was '" + text + "'");
    }
  }

  static ConsoleResponse json(JsonNode document) {
    try {
      return response(200, "application/json", JSON.writeValueAsBytes(document));
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  static ConsoleResponse error(int status, String code, String message) {
    ObjectNode error = JSON.createObjectNode();
    error.put("status", status);
    error.put("code", code);
    error.put("error", message);
    try {
      return response(status, "application/json", JSON.writeValueAsBytes(error));
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  static ConsoleResponse response(int status, String contentType, byte[] body) {
    Map<String, String> headers = new LinkedHashMap<>();
    headers.put("Content-Type", contentType);
    headers.put("Content-Security-Policy", OutboxConsole.CONTENT_SECURITY_POLICY);
    headers.put("X-Content-Type-Options", "nosniff");
    headers.put("X-Frame-Options", "DENY");
    headers.put("Referrer-Policy", "no-referrer");
    headers.put("Cache-Control", "no-store");
    return new ConsoleResponse(status, headers, body);
  }
}

package dev.pgoutbox.example.orders;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** A small HTTP client for the tests: JSON in, status, content type and JSON (or text) out. */
final class Http {

  static final ObjectMapper JSON = new ObjectMapper();

  private final HttpClient client =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  private final URI base;

  Http(URI base) {
    this.base = base;
  }

  record Reply(int status, String contentType, String text) {
    JsonNode json() {
      try {
        return JSON.readTree(text);
      } catch (IOException e) {
        throw new AssertionError("not JSON (" + status + " " + contentType + "): " + text, e);
      }
    }
  }

  Reply get(String path) {
    return send(HttpRequest.newBuilder(base.resolve(path)).GET());
  }

  Reply post(String path, String body) {
    return send(
        HttpRequest.newBuilder(base.resolve(path))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(body)));
  }

  Reply post(String path) {
    return send(
        HttpRequest.newBuilder(base.resolve(path)).POST(HttpRequest.BodyPublishers.noBody()));
  }

  Reply send(String method, String path) {
    return send(
        HttpRequest.newBuilder(base.resolve(path))
            .method(method, HttpRequest.BodyPublishers.noBody()));
  }

  private Reply send(HttpRequest.Builder request) {
    try {
      HttpResponse<String> response =
          client.send(
              request.timeout(Duration.ofSeconds(30)).build(),
              HttpResponse.BodyHandlers.ofString());
      return new Reply(
          response.statusCode(),
          response.headers().firstValue("Content-Type").orElse(""),
          response.body());
    } catch (IOException e) {
      throw new AssertionError(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  /** A valid order body with {@code lines} lines. */
  static String order(String customer, int lines) {
    StringBuilder b = new StringBuilder("{\"customerId\":\"" + customer + "\",\"items\":[");
    for (int i = 1; i <= lines; i++) {
      if (i > 1) {
        b.append(',');
      }
      b.append("{\"sku\":\"SKU-").append(i).append("\",\"quantity\":").append(i);
      b.append(",\"unitPrice\":").append(i).append(".25}");
    }
    return b.append("]}").toString();
  }
}

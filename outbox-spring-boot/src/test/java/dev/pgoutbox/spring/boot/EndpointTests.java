package dev.pgoutbox.spring.boot;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgoutbox.testing.TestSchema;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.UUID;
import org.jspecify.annotations.Nullable;
import org.slf4j.LoggerFactory;

/**
 * What the tests of the {@code outbox} endpoint share: a dead letter written by hand, HTTP, logs.
 */
final class EndpointTests {

  /** A string in the planted payload that no listing may show unless payloads are on. */
  static final String PAYLOAD_SECRET = "card-4111-1111-1111-1111";

  /** A string in the planted headers that no listing may ever show. */
  static final String HEADER_SECRET = "Bearer header-token-5e3c";

  private EndpointTests() {}

  /**
   * Writes a dead letter by hand, as the relay leaves one: three attempts, a last error, dead now.
   * Its payload carries {@link #PAYLOAD_SECRET}, its headers {@link #HEADER_SECRET}.
   */
  static UUID plantDeadLetter(TestSchema db, String aggregateId) {
    UUID id = UUID.randomUUID();
    db.execute(
        ("INSERT INTO %s.outbox_events (id, aggregate_type, aggregate_id, event_type, payload,"
                + " headers, attempts, last_error, dead_at) VALUES ('%s', 'order', '%s',"
                + " 'order.paid', '{\"card\": \"%s\"}', '{\"authorization\": \"%s\"}', 3,"
                + " 'refused by the test broker', now())")
            .formatted(db.schema(), id, aggregateId, PAYLOAD_SECRET, HEADER_SECRET));
    return id;
  }

  /** The whole row of event {@code id} as JSON text, or null when there is none. */
  static @Nullable String row(TestSchema db, UUID id) {
    return db.queryString(
        "SELECT (SELECT row_to_json(e)::text FROM %s.outbox_events e WHERE id = '%s')"
            .formatted(db.schema(), id));
  }

  /** One HTTP answer. */
  record Response(int status, String body) {
    JsonNode json() {
      try {
        return new ObjectMapper().readTree(body);
      } catch (IOException e) {
        throw new AssertionError("not JSON: " + body, e);
      }
    }
  }

  /** Requests to the application on {@code port}, anonymous or with HTTP Basic credentials. */
  static final class Http {
    private final HttpClient client = HttpClient.newHttpClient();
    private final int port;

    Http(int port) {
      this.port = port;
    }

    Response send(String method, String path) {
      return send(method, path, null);
    }

    /**
     * {@code user} is {@code name:password}, or null for an anonymous request. A POST says {@code
     * Content-Type: application/json}, as the endpoint's write operations require.
     */
    Response send(String method, String path, @Nullable String user) {
      return send(method, path, user, method.equals("POST") ? "application/json" : null);
    }

    /** A request with that {@code Content-Type}, or none. */
    Response send(String method, String path, @Nullable String user, @Nullable String contentType) {
      HttpRequest.Builder request =
          HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
              .method(method, HttpRequest.BodyPublishers.noBody());
      if (contentType != null) {
        request.header("Content-Type", contentType);
      }
      if (user != null) {
        request.header(
            "Authorization",
            "Basic " + Base64.getEncoder().encodeToString(user.getBytes(StandardCharsets.UTF_8)));
      }
      try {
        HttpResponse<String> response =
            client.send(request.build(), HttpResponse.BodyHandlers.ofString());
        return new Response(response.statusCode(), response.body());
      } catch (IOException e) {
        throw new AssertionError(method + " " + path, e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError(method + " " + path, e);
      }
    }
  }

  /** The lines {@link OutboxEndpoint} logs from now on (attach after the context started). */
  static final class EndpointLog implements AutoCloseable {
    private final Logger logger = (Logger) LoggerFactory.getLogger(OutboxEndpoint.class);
    private final ListAppender<ILoggingEvent> appender = new ListAppender<>();

    EndpointLog() {
      appender.start();
      logger.addAppender(appender);
    }

    /** Each line as {@code LEVEL message}. */
    List<String> lines() {
      synchronized (appender) { // AppenderBase.doAppend holds it
        return appender.list.stream()
            .map(e -> e.getLevel() + " " + e.getFormattedMessage())
            .toList();
      }
    }

    @Override
    public void close() {
      logger.detachAppender(appender);
      appender.stop();
    }
  }
}

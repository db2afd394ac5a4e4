package dev.pgoutbox.relay.webhook;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.Publisher;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * Publishes outbox events as HTTP POST requests (webhooks) with the JDK's {@link HttpClient}.
 *
 * <pre>{@code
 * try (WebhookPublisher webhooks =
 *     WebhookPublisher.builder(URI.create("https://billing.example.com/events"))
 *         .signingSecret(secret)                 // optional: X-Pgoutbox-Signature: sha256=<hex>
 *         .build()) {
 *   // hand it to the relay
 * }
 * }</pre>
 *
 * <p><b>The request.</b> {@code POST <routing.uri(event)>}, body = the payload JSON exactly as
 * stored, with headers {@code Content-Type: application/json}, {@value WebhookEventIds#HEADER} =
 * event id (the receiver's dedup key, read back with {@link WebhookEventIds}), {@value
 * #EVENT_TYPE_HEADER}, {@value #AGGREGATE_TYPE_HEADER}, {@value #AGGREGATE_ID_HEADER}, every stored
 * header (e.g. {@code traceparent}) under its own name, and, with a signing secret, {@value
 * WebhookSignature#HEADER} (see {@link WebhookSignature}).
 *
 * <p><b>The answer.</b> 2xx: published. 408, 429, 5xx, timeouts and I/O errors (refused, reset):
 * retryable, with the server's {@code Retry-After} (seconds or HTTP-date) passed on to the relay.
 * Any other status (other 4xx, 3xx: redirects are not followed) and a request that cannot be built
 * (bad URL, a stored header the JDK refuses to send such as {@code Host}): permanent, with the
 * status and the start of the response body in the reason.
 *
 * <p><b>Order.</b> The requests of one batch run concurrently (up to {@link
 * Builder#maxConcurrency}), but those of one aggregate ({@code aggregate_type, aggregate_id}) are
 * sent one after another: the next only once the previous one got a 2xx. When one fails, the later
 * events of that aggregate in the batch are not sent and are answered retryable, so a receiver
 * never sees event N+1 of an aggregate before event N.
 *
 * <p>Thread-safe. {@link #close()} closes the {@code HttpClient} only if this publisher created it.
 */
public final class WebhookPublisher implements Publisher {

  /** The header carrying the event type: {@value}. */
  public static final String EVENT_TYPE_HEADER = "X-Pgoutbox-Event-Type";

  /** The header carrying the aggregate type: {@value}. */
  public static final String AGGREGATE_TYPE_HEADER = "X-Pgoutbox-Aggregate-Type";

  /** The header carrying the aggregate id: {@value}. */
  public static final String AGGREGATE_ID_HEADER = "X-Pgoutbox-Aggregate-Id";

  /** How long one request may take, by default: 10 seconds. */
  public static final Duration DEFAULT_REQUEST_TIMEOUT = Duration.ofSeconds(10);

  /** How many requests of a batch may be in flight at once, by default: {@value}. */
  public static final int DEFAULT_MAX_CONCURRENCY = 16;

  private static final int MAX_REASON_BODY = 200;

  private final WebhookRouting routing;
  private final HttpClient client;
  private final boolean ownsClient;
  private final Duration requestTimeout;
  private final int maxConcurrency;
  private final byte @Nullable [] signingSecret;
  private final Clock clock;

  private WebhookPublisher(Builder b) {
    this.routing = b.routing;
    this.requestTimeout = b.requestTimeout;
    this.maxConcurrency = b.maxConcurrency;
    this.signingSecret = b.signingSecret;
    this.clock = b.clock;
    HttpClient given = b.httpClient;
    if (given != null) {
      this.client = given;
      this.ownsClient = false;
    } else {
      this.client =
          HttpClient.newBuilder()
              .connectTimeout(requestTimeout)
              .followRedirects(HttpClient.Redirect.NEVER)
              .build();
      this.ownsClient = true;
    }
  }

  /**
   * A builder that posts every event to {@code endpoint}.
   *
   * @throws IllegalArgumentException if {@code endpoint} is not an absolute http(s) URL
   */
  public static Builder builder(URI endpoint) {
    return new Builder(WebhookRouting.fixed(endpoint));
  }

  /** A builder that posts each event to the URL {@code routing} chooses for it. */
  public static Builder builder(WebhookRouting routing) {
    return new Builder(requireNonNull(routing, "routing"));
  }

  @Override
  public CompletionStage<List<PublishResult>> publish(List<OutboxMessage> batch) {
    return new BatchRun(batch).start();
  }

  /** Closes the {@code HttpClient} if this publisher created it. */
  @Override
  public void close() {
    if (ownsClient) {
      client.close();
    }
  }

  /** One call of {@link #publish}: per-aggregate chains of requests, several chains at once. */
  private final class BatchRun {
    private final List<OutboxMessage> batch;
    private final PublishResult[] results;
    private final ConcurrentLinkedQueue<int[]> waiting = new ConcurrentLinkedQueue<>();
    private final AtomicInteger chainsLeft;
    private final CompletableFuture<List<PublishResult>> done = new CompletableFuture<>();

    BatchRun(List<OutboxMessage> batch) {
      this.batch = List.copyOf(batch);
      this.results = new PublishResult[this.batch.size()];
      Map<String, List<Integer>> chains = new LinkedHashMap<>();
      for (int i = 0; i < this.batch.size(); i++) {
        OutboxMessage m = this.batch.get(i);
        chains
            .computeIfAbsent(m.aggregateType() + '\u0000' + m.aggregateId(), k -> new ArrayList<>())
            .add(i);
      }
      chains.values().forEach(c -> waiting.add(c.stream().mapToInt(Integer::intValue).toArray()));
      this.chainsLeft = new AtomicInteger(chains.size());
    }

    CompletableFuture<List<PublishResult>> start() {
      if (batch.isEmpty()) {
        return CompletableFuture.completedFuture(List.of());
      }
      for (int i = 0; i < maxConcurrency; i++) {
        int[] chain = waiting.poll();
        if (chain == null) {
          break;
        }
        send(chain, 0);
      }
      return done;
    }

    private void send(int[] chain, int pos) {
      int index = chain[pos];
      OutboxMessage message = batch.get(index);
      HttpRequest request;
      try {
        request = request(message);
      } catch (RuntimeException e) {
        answered(chain, pos, PublishResult.permanent("cannot build the webhook request: " + e));
        return;
      }
      CompletableFuture<HttpResponse<String>> response;
      try {
        response = client.sendAsync(request, HttpResponse.BodyHandlers.ofString());
      } catch (RuntimeException e) {
        answered(chain, pos, PublishResult.retryable("webhook " + request.uri() + ": " + e));
        return;
      }
      response.whenComplete(
          (r, e) -> {
            PublishResult result;
            try {
              result = e == null ? classify(request.uri(), r) : failure(request, e);
            } catch (RuntimeException x) {
              // Never leave a chain unanswered: the batch would wait for the publish timeout.
              result =
                  PublishResult.retryable("webhook " + request.uri() + ": unreadable answer: " + x);
            }
            answered(chain, pos, result);
          });
    }

    private void answered(int[] chain, int pos, PublishResult result) {
      results[chain[pos]] = result;
      if (result instanceof PublishResult.Published && pos + 1 < chain.length) {
        send(chain, pos + 1);
        return;
      }
      for (int later = pos + 1; later < chain.length; later++) {
        results[chain[later]] =
            PublishResult.retryable(
                "not sent: earlier event "
                    + batch.get(chain[pos]).id()
                    + " of this aggregate failed in the same batch");
      }
      int[] next = waiting.poll();
      if (next != null) {
        send(next, 0);
      }
      if (chainsLeft.decrementAndGet() == 0) {
        done.complete(Arrays.asList(results));
      }
    }
  }

  private HttpRequest request(OutboxMessage m) {
    URI uri = requireNonNull(routing.uri(m), "routing returned null");
    byte[] body = m.payloadBytes();
    HttpRequest.Builder r =
        HttpRequest.newBuilder(uri)
            .timeout(requestTimeout)
            .POST(HttpRequest.BodyPublishers.ofByteArray(body));
    for (Map.Entry<String, String> h : m.headers().entrySet()) {
      r.setHeader(h.getKey(), h.getValue());
    }
    r.setHeader("Content-Type", "application/json")
        .setHeader(WebhookEventIds.HEADER, m.id().toString())
        .setHeader(EVENT_TYPE_HEADER, m.eventType())
        .setHeader(AGGREGATE_TYPE_HEADER, m.aggregateType())
        .setHeader(AGGREGATE_ID_HEADER, m.aggregateId());
    byte[] secret = signingSecret;
    if (secret != null) {
      r.setHeader(WebhookSignature.HEADER, WebhookSignature.sign(secret, body));
    }
    return r.build();
  }

  private PublishResult classify(URI uri, HttpResponse<String> response) {
    int status = response.statusCode();
    if (status >= 200 && status < 300) {
      return PublishResult.published();
    }
    String body = response.body() == null ? "" : response.body().strip();
    if (body.length() > MAX_REASON_BODY) {
      body = body.substring(0, MAX_REASON_BODY) + "...";
    }
    String reason =
        "webhook " + uri + " answered HTTP " + status + (body.isEmpty() ? "" : ": " + body);
    if (status == 408 || status == 429 || status >= 500) {
      return PublishResult.retryable(
          reason, retryAfter(response.headers().firstValue("Retry-After").orElse(null)));
    }
    return PublishResult.permanent(reason);
  }

  private static PublishResult failure(HttpRequest request, Throwable e) {
    Throwable cause = e;
    while ((cause instanceof CompletionException || cause instanceof ExecutionException)
        && cause.getCause() != null) {
      cause = cause.getCause();
    }
    String what =
        cause instanceof HttpTimeoutException
            ? "timed out"
            : cause instanceof IOException ? "I/O error" : "failed";
    return PublishResult.retryable("webhook " + request.uri() + " " + what + ": " + cause);
  }

  /** {@code Retry-After} as delay-seconds or an HTTP-date; null when absent or unreadable. */
  @Nullable Duration retryAfter(@Nullable String value) {
    if (value == null || value.isBlank()) {
      return null;
    }
    String v = value.trim();
    if (v.chars().allMatch(Character::isDigit)) {
      try {
        return Duration.ofSeconds(Long.parseLong(v));
      } catch (NumberFormatException e) {
        return null;
      }
    }
    try {
      Instant at = ZonedDateTime.parse(v, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant();
      Duration d = Duration.between(clock.instant(), at);
      return d.isNegative() ? Duration.ZERO : d;
    } catch (DateTimeParseException e) {
      return null;
    }
  }

  /**
   * Settings of a {@link WebhookPublisher}. Not thread-safe; {@link #build()} may be called more
   * than once.
   */
  public static final class Builder {
    private final WebhookRouting routing;
    private @Nullable HttpClient httpClient;
    private Duration requestTimeout = DEFAULT_REQUEST_TIMEOUT;
    private int maxConcurrency = DEFAULT_MAX_CONCURRENCY;
    private byte @Nullable [] signingSecret;
    private Clock clock = Clock.systemUTC();

    private Builder(WebhookRouting routing) {
      this.routing = routing;
    }

    /**
     * Sends with the host's client (its proxy, TLS and executor settings) instead of one this
     * publisher creates; the publisher never closes it. Give it {@code Redirect.NEVER} unless the
     * receiver's redirects are trusted to keep the POST.
     */
    public Builder httpClient(HttpClient client) {
      this.httpClient = requireNonNull(client, "httpClient");
      return this;
    }

    /**
     * How long one request may take, connection included, before it counts as a retryable timeout.
     * Default {@link #DEFAULT_REQUEST_TIMEOUT}.
     */
    public Builder requestTimeout(Duration timeout) {
      requireNonNull(timeout, "requestTimeout");
      if (timeout.isNegative() || timeout.isZero()) {
        throw new IllegalArgumentException("requestTimeout must be positive, was " + timeout);
      }
      this.requestTimeout = timeout;
      return this;
    }

    /**
     * How many requests of one batch may be in flight at once (each on a different aggregate).
     * Between 1 and 1024, default {@value #DEFAULT_MAX_CONCURRENCY}.
     */
    public Builder maxConcurrency(int max) {
      if (max < 1 || max > 1024) {
        throw new IllegalArgumentException("maxConcurrency must be between 1 and 1024, was " + max);
      }
      this.maxConcurrency = max;
      return this;
    }

    /**
     * Signs every request body with HMAC-SHA256 under {@code secret}, in the {@value
     * WebhookSignature#HEADER} header (see {@link WebhookSignature}). The array is copied.
     */
    public Builder signingSecret(byte[] secret) {
      requireNonNull(secret, "signingSecret");
      if (secret.length == 0) {
        throw new IllegalArgumentException("signingSecret must not be empty");
      }
      this.signingSecret = secret.clone();
      return this;
    }

    /** The clock that turns an HTTP-date {@code Retry-After} into a delay. Default UTC. */
    public Builder clock(Clock clock) {
      this.clock = requireNonNull(clock, "clock");
      return this;
    }

    /** A publisher with these settings. */
    public WebhookPublisher build() {
      return new WebhookPublisher(this);
    }
  }
}

package dev.pgoutbox.relay.webhook;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.core.consumer.HeaderValues;
import dev.pgoutbox.core.consumer.StandardWebhooks;
import dev.pgoutbox.core.consumer.WebhookCloudEvents;
import dev.pgoutbox.core.consumer.WebhookEventIds;
import dev.pgoutbox.core.consumer.WebhookHeaders;
import dev.pgoutbox.core.consumer.WebhookSignature;
import dev.pgoutbox.relay.AggregateSequencer;
import dev.pgoutbox.relay.CloudEvents;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.PublisherSupport;
import dev.pgoutbox.relay.SpanAttributes;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;

/**
 * Publishes outbox events as HTTP POST requests (webhooks) with the JDK's {@link HttpClient}.
 *
 * <pre>{@code
 * try (WebhookPublisher webhooks =
 *     WebhookPublisher.builder(URI.create("https://billing.example.com/events"))
 *         .standardWebhooksSecret("whsec_...")  // webhook-id, webhook-timestamp, webhook-signature
 *         .build()) {
 *   // hand it to the relay
 * }
 * }</pre>
 *
 * <p><b>The request.</b> {@code POST <routing.uri(event)>}, body = the payload JSON exactly as
 * stored, with headers {@code Content-Type: application/json}, {@value WebhookEventIds#HEADER} =
 * event id (the receiver's dedup key, read back with {@link WebhookEventIds}), {@value
 * #EVENT_TYPE_HEADER}, {@value #AGGREGATE_TYPE_HEADER}, {@value #AGGREGATE_ID_HEADER}, every stored
 * header (e.g. {@code traceparent}) under its own name, and, with a Standard Webhooks secret, the
 * signature headers of {@link StandardWebhooks} (id, timestamp and body signed: a captured request
 * replayed later or under another id fails the receiver's check). Plain {@code http://} URLs are
 * sent as HTTP/1.1 (no h2c upgrade, which some proxies mishandle; see {@link
 * Builder#cleartextHttp2}); {@code https://} as the client negotiates (HTTP/2 where the server
 * offers it).
 *
 * <p><b>Header values.</b> Every value the writer accepts arrives unchanged. pgoutbox's own headers
 * (the three above and the stored ones) travel as they are when plain (printable US-ASCII, no
 * leading or trailing space), any other value under the name followed by {@code *} as an RFC 8187
 * ext-value ({@code X-Pgoutbox-Aggregate-Id*: UTF-8''Z%C3%BCrich}), read back with {@link
 * WebhookHeaders#get}. CloudEvents {@code ce-*} values are percent-encoded as the HTTP binding
 * requires (§3.1.3.2), read back by {@link WebhookCloudEvents} (the CloudEvents Java SDK's HTTP
 * reader hands them back still encoded: cloudevents/sdk-java#748). A stored header named like one
 * of the envelope's (rows written before the writer refused such names) is left out: the envelope's
 * wins.
 *
 * <p><b>The answer.</b> 2xx: published. 408, 429, 5xx, timeouts and I/O errors (refused, reset):
 * retryable, with the server's {@code Retry-After} (seconds or HTTP-date, at most {@link
 * #MAX_RETRY_AFTER}) passed on to the relay. Any other status (other 4xx, 3xx: redirects are not
 * followed) and a request that cannot be built (a bad URL from the routing): permanent, with the
 * status and the start of the response body in the reason.
 *
 * <p><b>A hostile receiver.</b> At most {@value #MAX_RESPONSE_BYTES} bytes of a response body are
 * read, then the connection is closed; the request timeout covers the whole exchange (connection,
 * headers and that much body), so a receiver that trickles its answer or never ends it fails that
 * one event, retryable, once the timeout has passed. The size of the response headers is bounded by
 * the JDK ({@code jdk.http.maxHeaderSize}, 384 KiB by default in current JDKs). Reasons never carry
 * a URL's user info, query values or fragment: they show {@code
 * https://***@host:port/path?token=***}.
 *
 * <p><b>Order.</b> Requests go through {@link AggregateSequencer}: those of one batch run
 * concurrently (up to {@link Builder#maxConcurrency} aggregates at once), but those of one
 * aggregate ({@code aggregate_type, aggregate_id}) one after another, the next only once the
 * previous one got a 2xx. When one fails, the later events of that aggregate in the batch are not
 * sent and are answered retryable ("held back"), so a receiver never sees event N+1 of an aggregate
 * before event N. Cancelling the stage {@code publish} returns (the relay does on its publish
 * timeout) sends no further request and cancels the requests in flight.
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

  /** How long one exchange (connection, headers, body) may take, by default: 10 seconds. */
  public static final Duration DEFAULT_REQUEST_TIMEOUT = Duration.ofSeconds(10);

  /** How many requests of a batch may be in flight at once, by default: {@value}. */
  public static final int DEFAULT_MAX_CONCURRENCY = 16;

  /**
   * The longest {@code Retry-After} hint this publisher passes on: 1 hour. A longer one (a huge
   * number of seconds, a date years ahead) is cut to this, so that a receiver cannot park an
   * aggregate for an absurd time; the relay's own backoff still applies on top.
   */
  public static final Duration MAX_RETRY_AFTER = Duration.ofHours(1);

  /**
   * The most bytes of a response body this publisher reads: {@value} (the start of an error
   * message). The rest is never read: the connection is closed instead, so that a receiver that
   * answers with an endless body costs this much memory and no more.
   */
  public static final int MAX_RESPONSE_BYTES = 4096;

  private static final int MAX_REASON_BODY = 200;

  private final WebhookRouting routing;
  private final HttpClient client;
  private final boolean ownsClient;
  private final Duration requestTimeout;
  private final int maxConcurrency;
  private final byte @Nullable [] signingSecret;
  private final StandardWebhooks.@Nullable Signer standardWebhooks;
  private final @Nullable CloudEvents cloudEvents;
  private final Clock clock;
  private final boolean cleartextHttp2;
  private final AggregateSequencer sequencer;

  private WebhookPublisher(Builder b) {
    this.cleartextHttp2 = b.cleartextHttp2;
    this.routing = b.routing;
    this.requestTimeout = b.requestTimeout;
    this.maxConcurrency = b.maxConcurrency;
    this.signingSecret = b.signingSecret;
    this.standardWebhooks = b.standardWebhooks;
    this.cloudEvents = b.cloudEvents;
    this.clock = b.clock;
    this.sequencer = AggregateSequencer.builder().maxInFlight(maxConcurrency).build();
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
    return sequencer.publish(batch, this::send);
  }

  /** {@code webhook}. */
  @Override
  public String messagingSystem() {
    return "webhook";
  }

  /**
   * The URL's host, port and path (no query or user info, which may hold credentials), or null when
   * the routing throws.
   */
  @Override
  public @Nullable String destination(OutboxMessage message) {
    try {
      URI uri = routing.uri(message);
      return uri.getHost()
          + (uri.getPort() < 0 ? "" : ":" + uri.getPort())
          + (uri.getRawPath() == null ? "" : uri.getRawPath());
    } catch (RuntimeException e) {
      return null;
    }
  }

  /**
   * {@code server.address} and {@code server.port} of the event's URL (the scheme's default port
   * when it names none).
   */
  @Override
  public Map<String, Object> traceAttributes(OutboxMessage message) {
    try {
      URI uri = routing.uri(message);
      int port =
          uri.getPort() > 0 ? uri.getPort() : "https".equalsIgnoreCase(uri.getScheme()) ? 443 : 80;
      return SpanAttributes.server(uri.getHost(), port);
    } catch (RuntimeException e) {
      return Map.of();
    }
  }

  /** Closes the {@code HttpClient} if this publisher created it. */
  @Override
  public void close() {
    if (ownsClient) {
      client.close();
    }
  }

  /**
   * Sends one event's request. The whole exchange (connection, headers, at most {@link
   * #MAX_RESPONSE_BYTES} of the body) must end within the request timeout; past it, or when the
   * returned stage is cancelled, the exchange is aborted and its connection closed.
   */
  private CompletableFuture<PublishResult> send(OutboxMessage message) {
    HttpRequest request;
    try {
      request = request(message);
    } catch (RuntimeException e) {
      return CompletableFuture.completedFuture(
          PublishResult.permanent(
              "cannot build the webhook request: " + PublisherSupport.redactUrls(e.toString())));
    }
    String where = PublisherSupport.redact(request.uri());
    CappedBody body = new CappedBody(MAX_RESPONSE_BYTES);
    CompletableFuture<HttpResponse<byte[]>> response;
    try {
      response = client.sendAsync(request, info -> body);
    } catch (RuntimeException e) {
      return CompletableFuture.completedFuture(
          PublishResult.retryable(
              "webhook " + where + " failed: " + PublisherSupport.redactUrls(e.toString())));
    }
    // A plain future, not one derived from the client's: cancelling it must not race with the
    // client's own completion of a cancelled exchange.
    CompletableFuture<PublishResult> result = new CompletableFuture<>();
    response.whenComplete(
        (r, e) -> {
          PublishResult answer;
          try {
            answer = e == null ? classify(where, r) : failure(where, e);
          } catch (RuntimeException x) {
            answer =
                PublishResult.retryable(
                    "webhook "
                        + where
                        + " unreadable answer: "
                        + PublisherSupport.redactUrls(x.toString()));
          }
          result.complete(answer);
        });
    // The JDK's request timeout ends at the response headers; this one covers the body too.
    result.completeOnTimeout(
        PublishResult.retryable(
            "webhook "
                + where
                + " timed out: no whole answer (connection, headers and body) within "
                + requestTimeout),
        requestTimeout.toNanos(),
        TimeUnit.NANOSECONDS);
    result.whenComplete(
        (r, e) -> {
          if (!response.isDone()) {
            body.abort();
            response.cancel(true);
          }
        });
    return result;
  }

  private HttpRequest request(OutboxMessage m) {
    URI uri = requireNonNull(routing.uri(m), "routing returned null");
    CloudEvents ce = cloudEvents;
    boolean structured = ce != null && ce.isStructured();
    byte[] body =
        structured ? ce.structuredBody(m).getBytes(StandardCharsets.UTF_8) : m.payloadBytes();
    HttpRequest.Builder r =
        HttpRequest.newBuilder(uri)
            .timeout(requestTimeout)
            .POST(HttpRequest.BodyPublishers.ofByteArray(body));
    if (!cleartextHttp2 && "http".equalsIgnoreCase(uri.getScheme())) {
      // No h2c upgrade on plain text: proxies and servers that mishandle it fail the POST.
      r.version(HttpClient.Version.HTTP_1_1);
    }
    for (Map.Entry<String, String> h : m.headers().entrySet()) {
      // A row written before the writer refused envelope names (ce-type, Content-Type...) would
      // give two headers of one name: the envelope's wins.
      if (!PublisherSupport.isReservedHeader(h.getKey())) {
        ownHeader(r, h.getKey(), h.getValue());
      }
    }
    r.setHeader(
            "Content-Type",
            structured
                ? CloudEvents.STRUCTURED_CONTENT_TYPE + "; charset=UTF-8"
                : "application/json")
        .setHeader(WebhookEventIds.HEADER, m.id().toString());
    ownHeader(r, EVENT_TYPE_HEADER, m.eventType());
    ownHeader(r, AGGREGATE_TYPE_HEADER, m.aggregateType());
    ownHeader(r, AGGREGATE_ID_HEADER, m.aggregateId());
    if (ce != null && !structured) {
      // The HTTP binding (3.1.3.2): every ce-* value percent-encoded, a MUST.
      ce.percentEncodedAttributes(m)
          .forEach((name, value) -> r.setHeader(WebhookCloudEvents.PREFIX + name, value));
    }
    byte[] secret = signingSecret;
    if (secret != null) {
      r.setHeader(WebhookSignature.HEADER, WebhookSignature.sign(secret, body));
    }
    StandardWebhooks.Signer signer = standardWebhooks;
    if (signer != null) {
      // Signed at each attempt: the receiver refuses a timestamp outside its tolerance (replays).
      String id = m.id().toString();
      long timestamp = clock.instant().getEpochSecond();
      r.setHeader(StandardWebhooks.ID_HEADER, id)
          .setHeader(StandardWebhooks.TIMESTAMP_HEADER, Long.toString(timestamp))
          .setHeader(StandardWebhooks.SIGNATURE_HEADER, signer.sign(id, timestamp, body));
    }
    return r.build();
  }

  /**
   * One of pgoutbox's own headers: a plain value as it is, any other under {@code name*} as an RFC
   * 8187 ext-value (read back with {@link WebhookHeaders#get}).
   */
  private static void ownHeader(HttpRequest.Builder r, String name, String value) {
    if (HeaderValues.isPlain(value)) {
      r.setHeader(name, value);
    } else {
      r.setHeader(name + "*", HeaderValues.extValue(value));
    }
  }

  private PublishResult classify(String where, HttpResponse<byte[]> response) {
    int status = response.statusCode();
    if (status >= 200 && status < 300) {
      return PublishResult.published();
    }
    String body = new String(response.body(), StandardCharsets.UTF_8).strip();
    if (body.length() > MAX_REASON_BODY) {
      body = body.substring(0, MAX_REASON_BODY) + "...";
    }
    String reason =
        "webhook " + where + " answered HTTP " + status + (body.isEmpty() ? "" : ": " + body);
    if (status == 408 || status == 429 || status >= 500) {
      return PublishResult.retryable(
          reason, retryAfter(response.headers().firstValue("Retry-After").orElse(null)));
    }
    return PublishResult.permanent(reason);
  }

  private static PublishResult failure(String where, Throwable e) {
    Throwable cause = PublisherSupport.unwrap(e);
    String what =
        cause instanceof HttpTimeoutException
            ? "timed out"
            : cause instanceof IOException ? "I/O error" : "failed";
    return PublishResult.retryable(
        "webhook " + where + " " + what + ": " + PublisherSupport.redactUrls(cause.toString()));
  }

  /**
   * {@code Retry-After} as delay-seconds or an HTTP-date, at most {@link #MAX_RETRY_AFTER}; null
   * when absent or unreadable (negative numbers, garbage). A date in the past is zero.
   */
  @Nullable Duration retryAfter(@Nullable String value) {
    if (value == null || value.isBlank()) {
      return null;
    }
    String v = value.trim();
    if (v.chars().allMatch(c -> c >= '0' && c <= '9')) {
      // Digits only: too many of them for a long is still "a long time".
      if (v.length() > 18) {
        return MAX_RETRY_AFTER;
      }
      long seconds = Long.parseLong(v);
      return seconds >= MAX_RETRY_AFTER.toSeconds() ? MAX_RETRY_AFTER : Duration.ofSeconds(seconds);
    }
    try {
      Instant at = ZonedDateTime.parse(v, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant();
      Duration d = Duration.between(clock.instant(), at);
      if (d.isNegative()) {
        return Duration.ZERO;
      }
      return d.compareTo(MAX_RETRY_AFTER) > 0 ? MAX_RETRY_AFTER : d;
    } catch (DateTimeException | ArithmeticException e) {
      return null;
    }
  }

  /**
   * A response body read up to {@code max} bytes: at that many, or when {@link #abort()}ed, it
   * cancels its subscription, which makes the client close the connection rather than read on.
   */
  private static final class CappedBody implements HttpResponse.BodySubscriber<byte[]> {
    private final CompletableFuture<byte[]> body = new CompletableFuture<>();
    private final AtomicReference<Flow.@Nullable Subscription> subscription =
        new AtomicReference<>();
    private final byte[] buffer;
    private int length;

    CappedBody(int max) {
      this.buffer = new byte[max];
    }

    @Override
    public CompletionStage<byte[]> getBody() {
      return body;
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
      if (!subscription.compareAndSet(null, s) || body.isDone()) {
        s.cancel();
        return;
      }
      s.request(1);
    }

    @Override
    public void onNext(List<ByteBuffer> items) {
      if (body.isDone()) {
        return;
      }
      for (ByteBuffer item : items) {
        int n = Math.min(item.remaining(), buffer.length - length);
        item.get(buffer, length, n);
        length += n;
      }
      if (length == buffer.length) {
        body.complete(Arrays.copyOf(buffer, length));
        cancel();
      } else {
        requireNonNull(subscription.get()).request(1);
      }
    }

    @Override
    public void onError(Throwable error) {
      body.completeExceptionally(error);
    }

    @Override
    public void onComplete() {
      body.complete(Arrays.copyOf(buffer, length));
    }

    /** Stops reading: the exchange is over for this publisher. */
    void abort() {
      body.completeExceptionally(new CancellationException("webhook exchange aborted"));
      cancel();
    }

    private void cancel() {
      Flow.Subscription s = subscription.getAndSet(CANCELLED);
      if (s != null && s != CANCELLED) {
        s.cancel();
      }
    }
  }

  /** Marks a {@link CappedBody} whose subscription was cancelled. */
  private static final Flow.Subscription CANCELLED =
      new Flow.Subscription() {
        @Override
        public void request(long n) {}

        @Override
        public void cancel() {}
      };

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
    private StandardWebhooks.@Nullable Signer standardWebhooks;
    private @Nullable CloudEvents cloudEvents;
    private Clock clock = Clock.systemUTC();
    private boolean cleartextHttp2;

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
     * How long one exchange may take, from connecting to the last byte of the answer read, before
     * it counts as a retryable timeout and is aborted. Default {@link #DEFAULT_REQUEST_TIMEOUT}.
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
     * Also signs every request body with HMAC-SHA256 under {@code secret}, in the {@value
     * WebhookSignature#HEADER} header (see {@link WebhookSignature}), for receivers written against
     * it. Off unless called. The array is copied.
     *
     * @deprecated that signature covers the body only: a captured request replayed later, or with
     *     another {@value WebhookEventIds#HEADER} or event type, still verifies. Sign with {@link
     *     #standardWebhooksSecret(String)}, which covers the id and the time too; keep this only
     *     while receivers move over.
     */
    @Deprecated
    public Builder signingSecret(byte[] secret) {
      requireNonNull(secret, "signingSecret");
      if (secret.length == 0) {
        throw new IllegalArgumentException("signingSecret must not be empty");
      }
      this.signingSecret = secret.clone();
      return this;
    }

    /**
     * Signs every request as Standard Webhooks says, with {@code secret} ({@code whsec_} followed
     * by the base64 of a 24 to 64 byte key): headers {@value StandardWebhooks#ID_HEADER} (the event
     * id), {@value StandardWebhooks#TIMESTAMP_HEADER} (when this attempt was signed) and {@value
     * StandardWebhooks#SIGNATURE_HEADER} ({@code v1,<base64 HMAC-SHA256>}); receivers check them
     * with {@link StandardWebhooks#verifier}. The signature to use; the deprecated {@link
     * #signingSecret(byte[])} may be added beside it while receivers move over.
     *
     * @throws IllegalArgumentException if the secret is not base64 of 24 to 64 bytes
     */
    public Builder standardWebhooksSecret(String secret) {
      this.standardWebhooks = StandardWebhooks.signer(secret);
      return this;
    }

    /**
     * Sends each event as a CloudEvent (see {@link CloudEvents}): in binary mode, headers {@code
     * ce-id}, {@code ce-source}, {@code ce-specversion}, {@code ce-type}, {@code ce-subject},
     * {@code ce-time} with the payload as the body; in structured mode, the whole event as the JSON
     * body with {@code Content-Type: application/cloudevents+json}. Read back with {@link
     * WebhookCloudEvents}. Default: none.
     */
    public Builder cloudEvents(CloudEvents cloudEvents) {
      this.cloudEvents = requireNonNull(cloudEvents, "cloudEvents");
      return this;
    }

    /**
     * The clock that turns an HTTP-date {@code Retry-After} into a delay and stamps Standard
     * Webhooks signatures. Default UTC.
     */
    public Builder clock(Clock clock) {
      this.clock = requireNonNull(clock, "clock");
      return this;
    }

    /**
     * Whether a plain {@code http://} request may offer the client's HTTP version (HTTP/2 by
     * default: an {@code Upgrade: h2c} header on the first request of a connection). Default {@code
     * false}: such requests are sent as HTTP/1.1 with no upgrade, which proxies and servers that
     * mishandle h2c need. {@code https://} requests always negotiate (HTTP/2 where offered).
     */
    public Builder cleartextHttp2(boolean allow) {
      this.cleartextHttp2 = allow;
      return this;
    }

    /** A publisher with these settings. */
    public WebhookPublisher build() {
      return new WebhookPublisher(this);
    }
  }
}

package dev.pgoutbox.relay.micrometer;

import io.micrometer.tracing.Span;
import io.micrometer.tracing.TraceContext;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.handler.TracingObservationHandler;
import java.util.concurrent.TimeUnit;

/**
 * The stored context as the parent of a micrometer-tracing span. A tracing handler takes the span
 * of a {@link TracingObservationHandler.TracingContext} already in the observation's context as the
 * parent of the span it starts (and then puts its own span there), so the relay puts one holding
 * the stored span's context, built by the host's {@link Tracer} (the handler's bridge needs its own
 * {@link TraceContext} type). Loaded only when a tracer is given.
 */
final class TracerStoredParent implements StoredParent {

  private final Tracer tracer;

  TracerStoredParent(Tracer tracer) {
    this.tracer = tracer;
  }

  @Override
  public void apply(PublishObservationContext context, String traceparent) {
    Traceparent stored = Traceparent.parse(traceparent);
    if (stored == null) {
      return;
    }
    TraceContext parent =
        tracer
            .traceContextBuilder()
            .traceId(stored.traceId())
            .spanId(stored.spanId())
            .sampled(stored.sampled())
            .build();
    TracingObservationHandler.TracingContext tracing =
        new TracingObservationHandler.TracingContext();
    tracing.setSpan(new RemoteSpan(parent));
    context.put(TracingObservationHandler.TracingContext.class, tracing);
  }

  @Override
  public String toString() {
    return "parented with " + tracer.getClass().getSimpleName();
  }

  /**
   * A span of another process (the request that wrote the event): it has a context to be a parent
   * of, and nothing to record or end here.
   */
  private record RemoteSpan(TraceContext context) implements Span {

    @Override
    public boolean isNoop() {
      return false;
    }

    @Override
    public Span start() {
      return this;
    }

    @Override
    public Span name(String name) {
      return this;
    }

    @Override
    public Span event(String value) {
      return this;
    }

    @Override
    public Span event(String value, long time, TimeUnit timeUnit) {
      return this;
    }

    @Override
    public Span tag(String key, String value) {
      return this;
    }

    @Override
    public Span error(Throwable throwable) {
      return this;
    }

    @Override
    public void end() {}

    @Override
    public void end(long time, TimeUnit timeUnit) {}

    @Override
    public void abandon() {}

    @Override
    public Span remoteServiceName(String remoteServiceName) {
      return this;
    }

    @Override
    public Span remoteIpAndPort(String ip, int port) {
      return this;
    }
  }
}

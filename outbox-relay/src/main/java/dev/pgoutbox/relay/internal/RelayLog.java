package dev.pgoutbox.relay.internal;

import dev.pgoutbox.relay.OutboxMessage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.spi.LoggingEventBuilder;

/**
 * The relay's log lines, each prefixed with {@code pgoutbox-relay[name] - }, and carrying {@code
 * event_id}, {@code event_type}, {@code aggregate_id}, {@code attempt} as key-value pairs where an
 * event is concerned.
 */
public final class RelayLog {

  private static final Logger LOG = LoggerFactory.getLogger("dev.pgoutbox.relay.OutboxRelay");

  private final String name;
  private final String prefix;

  /** The log of the relay named {@code name}. */
  public RelayLog(String name) {
    this.name = name;
    this.prefix = "pgoutbox-relay[" + name + "] - ";
  }

  /** The relay's name. */
  public String relayName() {
    return name;
  }

  /** An INFO line. */
  public void info(String message, Object... args) {
    LOG.info(prefix + message, args);
  }

  /** A WARN line. */
  public void warn(String message, Object... args) {
    LOG.warn(prefix + message, args);
  }

  /** An ERROR line. */
  public void error(String message, Object... args) {
    LOG.error(prefix + message, args);
  }

  /** A DEBUG line. */
  public void debug(String message, Object... args) {
    LOG.debug(prefix + message, args);
  }

  /** Whether DEBUG is on. */
  public boolean isDebugEnabled() {
    return LOG.isDebugEnabled();
  }

  /** A WARN line about one event, with its structured fields. */
  public void warnEvent(OutboxMessage event, String message, Object... args) {
    withEvent(LOG.atWarn(), event).log(prefix + message, args);
  }

  /** An ERROR line about one event, with its structured fields. */
  public void errorEvent(OutboxMessage event, String message, Object... args) {
    withEvent(LOG.atError(), event).log(prefix + message, args);
  }

  private static LoggingEventBuilder withEvent(LoggingEventBuilder builder, OutboxMessage event) {
    return builder
        .addKeyValue("event_id", event.id())
        .addKeyValue("event_type", event.eventType())
        .addKeyValue("aggregate_id", event.aggregateId())
        .addKeyValue("attempt", event.attempt());
  }
}

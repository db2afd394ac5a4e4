package dev.pgoutbox.relay.wal;

import dev.pgoutbox.core.OutboxTransport;
import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.ListenConnectionFactory;
import dev.pgoutbox.relay.PublishTracing;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.RelayListener;
import dev.pgoutbox.relay.internal.RelayLog;
import java.time.Duration;
import java.util.concurrent.ScheduledExecutorService;
import javax.sql.DataSource;

/** Makes the WAL relay's readers: the first, and a new one each time the relay resumes. */
final class WalReaderFactory {

  private final DataSource dataSource;
  private final String schema;
  private final ListenConnectionFactory replicationConnections;
  private final WalSlot slot;
  private final Publisher publisher;
  private final PublishTracing tracing;
  private final RelayConfig config;
  private final RelayListener listener;
  private final RelayLog log;
  private final Duration attachRetry;
  private final OutboxTransport transport;

  /** Readers with the relay's settings. */
  WalReaderFactory(
      DataSource dataSource,
      String schema,
      ListenConnectionFactory replicationConnections,
      WalSlot slot,
      Publisher publisher,
      PublishTracing tracing,
      RelayConfig config,
      RelayListener listener,
      RelayLog log,
      Duration attachRetry,
      OutboxTransport transport) {
    this.dataSource = dataSource;
    this.schema = schema;
    this.replicationConnections = replicationConnections;
    this.slot = slot;
    this.publisher = publisher;
    this.tracing = tracing;
    this.config = config;
    this.listener = listener;
    this.log = log;
    this.attachRetry = attachRetry;
    this.transport = transport;
  }

  /** A reader on {@code exec}, not started, that calls {@code onSlotLost} once its slot is lost. */
  WalReader newReader(ScheduledExecutorService exec, WalReader.SlotLost onSlotLost) {
    WalReader next =
        new WalReader(
            exec,
            dataSource,
            schema,
            OutboxSchema.jooqSettings(schema),
            replicationConnections,
            slot,
            publisher,
            tracing,
            config,
            listener,
            log,
            attachRetry,
            onSlotLost);
    if (transport == OutboxTransport.MESSAGES) {
      next.readMessages();
    }
    return next;
  }
}

package dev.pgoutbox.relay.internal;

import dev.pgoutbox.relay.PublishTracing;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.RelayListener;
import java.util.concurrent.ScheduledExecutorService;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * What a {@link dev.pgoutbox.relay.RelayBuilder} was given, handed to the relay it builds.
 *
 * @param tracing null for the automatic choice
 * @param executor null when the relay makes its own
 */
public record RelaySettings(
    String name,
    DataSource dataSource,
    String schema,
    Publisher publisher,
    RelayConfig config,
    RelayListener listener,
    @Nullable PublishTracing tracing,
    @Nullable ScheduledExecutorService executor) {}

package dev.pgoutbox.relay.testing;

import io.nats.client.Connection;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamSubscription;
import io.nats.client.PushSubscribeOptions;
import io.nats.client.api.StreamConfiguration;
import java.io.IOException;

/**
 * Reading back what a test published to the test NATS JetStream, the one way the wire tests share.
 */
public final class NatsReadBack {

  private NatsReadBack() {}

  /**
   * Adds a stream named {@code prefix} for the subjects {@code <prefix>.>}; the caller deletes it.
   */
  public static void addStream(Connection connection, String prefix)
      throws IOException, JetStreamApiException {
    connection
        .jetStreamManagement()
        .addStream(StreamConfiguration.builder().name(prefix).subjects(prefix + ".>").build());
  }

  /** An ordered push subscription to the subjects {@code <prefix>.>}. */
  public static JetStreamSubscription subscribeOrdered(Connection connection, String prefix)
      throws IOException, JetStreamApiException {
    return connection
        .jetStream()
        .subscribe(prefix + ".>", PushSubscribeOptions.builder().ordered(true).build());
  }
}

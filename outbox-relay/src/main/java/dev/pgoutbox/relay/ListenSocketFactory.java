package dev.pgoutbox.relay;

import dev.pgoutbox.relay.internal.ProbeAnsweringSocketFactory;

/**
 * The socket factory of the relay's {@code LISTEN} connections, named in pgjdbc's {@code
 * socketFactory} connection property: {@code socketFactory=dev.pgoutbox.relay.ListenSocketFactory}.
 *
 * <p>pgjdbc reads notifications until none is left, and to decide whether one is left it waits up
 * to 1 ms for the next one. Writers that commit 1,000 or more transactions a second send one
 * notification each, so the next one nearly always arrives within that millisecond: reading "what
 * has arrived" went on for hundreds of milliseconds at a time (measured: 113 ms at the median and 1
 * s at most at 2,000 commits a second), and a relay that read its notifications between batches
 * published a quarter of what was written. This factory's sockets answer that 1 ms probe at once
 * from what the operating system has already received, so reading notifications never waits for the
 * next one; a wait for the first one (the relay's idle wait) is unchanged.
 *
 * <p>{@link ListenConnectionFactory#of} and the factories the relay derives from its data source
 * set it unless a {@code socketFactory} is configured already. A custom {@link
 * ListenConnectionFactory} should open its connections with it too.
 */
public final class ListenSocketFactory extends ProbeAnsweringSocketFactory {

  /** Instantiated by pgjdbc from its name. */
  public ListenSocketFactory() {}

  /** Always: reading notifications never waits for the next one. */
  @Override
  protected boolean answerAtOnce() {
    return true;
  }
}

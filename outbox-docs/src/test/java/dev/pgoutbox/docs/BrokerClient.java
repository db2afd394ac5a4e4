package dev.pgoutbox.docs;

// snippet:start client
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * The asynchronous client of a message broker, the kind most broker SDKs offer: {@code send}
 * returns at once with a future of the broker's acknowledgement. It stands in for your broker's own
 * client; {@link BrokerPublisher} shows how to put any such client behind the relay.
 */
public interface BrokerClient {

  /**
   * Sends one message.
   *
   * @return completes when the broker has stored the message (its ack); completes exceptionally
   *     with {@link Refused} when the broker refused it, or with another exception when the
   *     connection failed. Cancelling it abandons the request.
   * @throws IllegalStateException when the client is closed
   */
  CompletableFuture<Void> send(Message message);

  /**
   * One message as the broker takes it.
   *
   * @param topic where it goes; letters, digits, {@code .}, {@code _}, {@code -}, at most 100
   * @param key the partition key: messages of one key go to one partition, in the order stored
   * @param id the message id: the broker keeps one copy of messages with the same id
   */
  record Message(String topic, String key, String id, Map<String, String> headers, byte[] body) {
    private static final Pattern TOPIC = Pattern.compile("[A-Za-z0-9._-]{1,100}");

    /** Refuses what the broker's protocol cannot carry. */
    public Message {
      if (!TOPIC.matcher(topic).matches()) {
        throw new IllegalArgumentException("invalid topic name '" + topic + "'");
      }
      headers = Map.copyOf(headers);
    }
  }

  /** The broker refused a message, for good or for now. */
  final class Refused extends Exception {
    private static final long serialVersionUID = 1L;

    private final boolean permanent;
    private final transient @Nullable Duration retryAfter;

    /**
     * A refusal.
     *
     * @param permanent whether sending the same message again can never succeed (too large, not
     *     authorized)
     * @param retryAfter the broker's "try again in" hint when it throttles, or null
     */
    public Refused(String message, boolean permanent, @Nullable Duration retryAfter) {
      super(message);
      this.permanent = permanent;
      this.retryAfter = retryAfter;
    }

    /** Whether sending the same message again can never succeed. */
    public boolean permanent() {
      return permanent;
    }

    /** The broker's hint of when to try again, or null. */
    public @Nullable Duration retryAfter() {
      return retryAfter;
    }
  }
}
// snippet:end client

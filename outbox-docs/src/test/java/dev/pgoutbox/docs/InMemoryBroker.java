package dev.pgoutbox.docs;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * A broker in memory behind the {@link BrokerClient} API, for the tests of {@link BrokerPublisher}:
 * topics of {@link #PARTITIONS} partitions chosen by the key's hash, deduplication by message id,
 * acknowledgements on a thread of its own after a random delay of up to 3 ms (so acks of different
 * aggregates arrive out of order), and a script deciding how it reacts to each message.
 */
final class InMemoryBroker implements BrokerClient, AutoCloseable {

  static final int PARTITIONS = 4;

  /** How the broker reacts to one message. */
  sealed interface Reaction {
    /** Stores the message and acknowledges it. */
    Reaction ACK = new Ack();

    /** Never answers (a lost ack). */
    Reaction HANG = new Hang();

    /** Refuses the message. */
    static Reaction refuse(String reason, boolean permanent, @Nullable Duration retryAfter) {
      return new Refuse(reason, permanent, retryAfter);
    }

    /** Fails the request as a broken connection would. */
    static Reaction connectionLost() {
      return new Fail();
    }

    /** Throws out of {@code send} itself, as a closed client does. */
    static Reaction throwOnSend() {
      return new Throw();
    }
  }

  record Ack() implements Reaction {}

  record Hang() implements Reaction {}

  record Refuse(String reason, boolean permanent, @Nullable Duration retryAfter)
      implements Reaction {}

  record Fail() implements Reaction {}

  record Throw() implements Reaction {}

  /** A message the broker stored. */
  record Stored(String topic, int partition, Message message) {}

  private final ScheduledExecutorService acks =
      Executors.newSingleThreadScheduledExecutor(
          Thread.ofPlatform().name("in-memory-broker").daemon(true).factory());
  private final Object lock = new Object();
  private final List<Stored> stored = new ArrayList<>();
  private final Set<String> ids = new HashSet<>();
  private final ConcurrentLinkedQueue<Message> received = new ConcurrentLinkedQueue<>();
  private final ConcurrentLinkedQueue<CompletableFuture<Void>> hung = new ConcurrentLinkedQueue<>();
  private volatile Function<Message, Reaction> script = m -> Reaction.ACK;
  private int duplicates;

  /** Decides the reaction to each message from now on (default: {@link Reaction#ACK}). */
  InMemoryBroker script(Function<Message, Reaction> script) {
    this.script = script;
    return this;
  }

  @Override
  public CompletableFuture<Void> send(Message message) {
    received.add(message);
    Reaction reaction = script.apply(message);
    CompletableFuture<Void> ack = new CompletableFuture<>();
    switch (reaction) {
      case Throw t -> throw new IllegalStateException("client is closed");
      case Hang h -> hung.add(ack);
      case Ack a -> later(() -> ack.complete(store(message)));
      case Refuse r ->
          later(
              () ->
                  ack.completeExceptionally(
                      new Refused(r.reason(), r.permanent(), r.retryAfter())));
      case Fail f ->
          later(() -> ack.completeExceptionally(new java.io.IOException("connection reset")));
    }
    return ack;
  }

  private void later(Runnable task) {
    acks.schedule(task, ThreadLocalRandom.current().nextInt(3_000), TimeUnit.MICROSECONDS);
  }

  private @Nullable Void store(Message message) {
    synchronized (lock) {
      if (ids.add(message.id())) {
        int partition = Math.floorMod(message.key().hashCode(), PARTITIONS);
        stored.add(new Stored(message.topic(), partition, message));
      } else {
        duplicates++;
      }
    }
    return null;
  }

  /** Every message stored, in the order stored. */
  List<Stored> stored() {
    synchronized (lock) {
      return List.copyOf(stored);
    }
  }

  /** Messages acknowledged without being stored again: their id was already stored. */
  int duplicates() {
    synchronized (lock) {
      return duplicates;
    }
  }

  /** Every message handed to {@link #send}, in the order received. */
  List<Message> received() {
    return List.copyOf(received);
  }

  /** The requests that got no answer, for the tests to see whether they were cancelled. */
  List<CompletableFuture<Void>> hung() {
    return List.copyOf(hung);
  }

  @Override
  public void close() {
    acks.shutdownNow();
  }
}

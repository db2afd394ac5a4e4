package dev.pgoutbox.core.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

class IdsTest {

  @Test
  void idsAreUuidV7WithTheCurrentTime() {
    long before = System.currentTimeMillis();
    UUID id = Ids.next();
    long after = System.currentTimeMillis();

    assertThat(id.version()).isEqualTo(7);
    assertThat(id.variant()).isEqualTo(2);
    assertThat(Ids.epochMillis(id)).isBetween(before, after);
  }

  @Test
  void idsIncreaseStrictlyWithinAMillisecondAndAcrossThreads() throws Exception {
    int threads = 4;
    int perThread = 50_000;
    CountDownLatch start = new CountDownLatch(1);
    ConcurrentLinkedQueue<List<UUID>> results = new ConcurrentLinkedQueue<>();
    List<Thread> workers = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      Thread worker =
          new Thread(
              () -> {
                List<UUID> ids = new ArrayList<>(perThread);
                try {
                  start.await();
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                  return;
                }
                for (int i = 0; i < perThread; i++) {
                  ids.add(Ids.next());
                }
                results.add(ids);
              });
      worker.start();
      workers.add(worker);
    }
    start.countDown();
    for (Thread worker : workers) {
      worker.join();
    }

    assertThat(results).hasSize(threads);
    List<UUID> all = new ArrayList<>();
    for (List<UUID> ids : results) {
      assertThat(ids).isSorted(); // UUID.compareTo orders v7 ids by time, then counter
      all.addAll(ids);
    }
    assertThat(all).doesNotHaveDuplicates();
  }
}
